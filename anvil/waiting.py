"""What waits for a person: the suggestions to decide on, the Loom's drafts and the imports'
proposals to apply or drop, and the summaries withheld until the Mirror writes them again.

Counted for the chat's memory drawer (its badge, ``anvil.drawer``) and the Anvil's index, which
leads with it. Each kind is counted only for an account that may open its list."""

from dataclasses import dataclass

from django.urls import reverse

from loom.models import DraftState, LoomCall
from mirror.models import SuggestionStatus, Summary, TagSuggestion
from mirror.selectors import summaries_stale
from silentstar.words import counted
from transfer.models import ImportedProposal, ProposalState


@dataclass(frozen=True)
class Waiting:
    """One kind of what waits: how many, said in words, and the Anvil's list of them."""

    count: int
    said: str
    url: str
    decides: bool  # a person's decision (not the Mirror's work)


def waiting_for(user) -> list[Waiting]:
    """What waits, kind by kind, of what ``user`` may see (kinds with none left out)."""
    kinds = []
    if user.has_perm("mirror.view_tagsuggestion"):
        count = TagSuggestion.objects.filter(status=SuggestionStatus.PENDING).count()
        kinds.append(
            Waiting(
                count,
                f"{counted(count, 'suggestion')} to decide on",
                reverse("admin:mirror_tagsuggestion_changelist"),
                decides=True,
            )
        )
    if user.has_perm("loom.view_loomcall"):
        count = LoomCall.objects.filter(draft_state=DraftState.PROPOSED).count()
        kinds.append(
            Waiting(
                count,
                f"{counted(count, 'draft')} of the Loom to apply or drop",
                reverse("admin:loom_loomcall_changelist")
                + f"?draft_state__exact={DraftState.PROPOSED}",
                decides=True,
            )
        )
    if user.has_perm("transfer.view_importedproposal"):
        count = ImportedProposal.objects.filter(state=ProposalState.PENDING).count()
        kinds.append(
            Waiting(
                count,
                f"{counted(count, 'imported proposal')} to apply or drop",
                reverse("admin:transfer_importedproposal_changelist")
                + f"?state__exact={ProposalState.PENDING}",
                decides=True,
            )
        )
    if user.has_perm("mirror.view_summary"):
        count = len(summaries_waiting())
        kinds.append(
            Waiting(
                count,
                f"{counted(count, 'summary', 'summaries')} to be written again after a correction",
                reverse("admin:mirror_summary_changelist") + "?waiting=yes",
                decides=False,
            )
        )
    return [kind for kind in kinds if kind.count]


def summaries_waiting() -> set[int]:
    """The current summaries withheld until the Mirror writes them again: an event they cover
    was corrected after they were written."""
    current = Summary.objects.filter(superseded_by__isnull=True).values_list(
        "pk", "first_event_id", "last_event_id", "created_at"
    )
    return summaries_stale(current)


def decisions_waiting(kinds: list[Waiting]) -> int:
    """How many things wait for a person's decision: the drawer's badge."""
    return sum(kind.count for kind in kinds if kind.decides)
