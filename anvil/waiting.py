"""What waits for a person: the suggestions to decide on, the Loom's drafts and the imports'
proposals to apply or drop, and the summaries withheld until the Mirror writes them again.

Counted for the chat's memory drawer (its badge, ``anvil.drawer``) and the Anvil's index, which
leads with it. Each kind is counted only for an account that may open its list."""

from collections.abc import Callable
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


@dataclass(frozen=True)
class _Kind:
    """A kind of what waits: who may see it, how many there are, and how they are said."""

    permission: str
    count: Callable[[], int]
    one: str
    many: str
    then: str  # what is to be done with them
    url: Callable[[], str]
    decides: bool


KINDS = (
    _Kind(
        "mirror.view_tagsuggestion",
        TagSuggestion.objects.filter(status=SuggestionStatus.PENDING).count,
        "suggestion",
        "suggestions",
        "to decide on",
        lambda: reverse("admin:mirror_tagsuggestion_changelist"),
        decides=True,
    ),
    _Kind(
        "loom.view_loomcall",
        LoomCall.objects.filter(draft_state=DraftState.PROPOSED).count,
        "draft",
        "drafts",
        "of the Loom to apply or drop",
        lambda: (
            reverse("admin:loom_loomcall_changelist") + f"?draft_state__exact={DraftState.PROPOSED}"
        ),
        decides=True,
    ),
    _Kind(
        "transfer.view_importedproposal",
        ImportedProposal.objects.filter(state=ProposalState.PENDING).count,
        "imported proposal",
        "imported proposals",
        "to apply or drop",
        lambda: (
            reverse("admin:transfer_importedproposal_changelist")
            + f"?state__exact={ProposalState.PENDING}"
        ),
        decides=True,
    ),
    _Kind(
        "mirror.view_summary",
        lambda: len(summaries_waiting()),
        "summary",
        "summaries",
        "to be written again after a correction",
        lambda: reverse("admin:mirror_summary_changelist") + "?waiting=yes",
        decides=False,
    ),
)


def waiting_for(user) -> list[Waiting]:
    """What waits, kind by kind, of what ``user`` may see (kinds with none left out)."""
    waiting = []
    for kind in KINDS:
        if not user.has_perm(kind.permission):
            continue
        if count := kind.count():
            said = f"{counted(count, kind.one, kind.many)} {kind.then}"
            waiting.append(Waiting(count, said, kind.url(), decides=kind.decides))
    return waiting


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
