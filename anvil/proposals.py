"""What an import proposes, decided in the Anvil: a draft of fragments applied through the
Gem's ``draft_apply``, or an addition to the wake text or the ambient prose saved as a new
version; or dropped.

A proposal is decided once: the row is claimed (pending → applied or dropped) in the same
transaction as what applying it writes, so a draft that cannot be applied leaves it pending,
and a second click, or a second person, finds it decided and changes nothing.

Each is written against the Gem as the import found it (``ImportedProposal.base``): a draft
over a fragment changed since is refused (``gem.draft.DraftConflict``), and so is an addition
when the text in use changed since (``WakeConflict``), unless the person applies it against the
text they saw (``against``, its digest, from the edit page).
"""

from dataclasses import dataclass

from django.contrib.admin.models import ADDITION, LogEntry
from django.db import transaction
from django.utils import timezone

from anvil.textdiff import text_change_summary
from events.selectors import source_events
from gem.draft import DraftDiff, DraftError, part_digest
from gem.drafts import draft_apply
from gem.models import AmbientProse, WakeText
from gem.services import text_version_add
from silentstar.when import when
from silentstar.words import quoted
from transfer.bridges import ADDED_TO, text_added
from transfer.models import ImportedProposal, ProposalKind, ProposalState

# What deciding a proposal of each kind takes: what the draft page and a new wake text take.
PERMISSIONS = {
    ProposalKind.DRAFT: ("gem.add_fragment", "gem.change_fragment"),
    ProposalKind.WAKE: ("gem.add_waketext",),
    ProposalKind.PROSE: ("gem.add_ambientprose",),
    ProposalKind.GREETING: ("gem.add_waketext",),
}


class ProposalError(Exception):
    """A proposal that is not there, or was decided already."""


WAKE = "wake"


def wake_digest(text: str) -> str:
    """The short digest of a wake text, that an edit page says it was applied against."""
    return part_digest(WAKE, text)


class WakeConflict(DraftError):
    """An addition proposed against a wake text (or ambient prose) in use that has changed
    since."""

    def __init__(self, *, base: str, now: str, what: str):
        self.base, self.now = base, now
        super().__init__(
            f"The {what} in use changed since the import proposed this: see what changed, "
            f"then apply it to today's {what}."
        )


@dataclass
class ProposalApplied:
    proposal: ImportedProposal
    diff: DraftDiff | None = None  # a draft's: what it changed in the Gem
    # An addition's: the version of the wake text or ambient prose it added, if it added one.
    wake: WakeText | AmbientProse | None = None


def proposal_may_decide(user, proposal: ImportedProposal) -> bool:
    """Whether ``user`` may apply, edit or drop ``proposal``."""
    return user.has_perms(PERMISSIONS[proposal.kind])


def proposal_apply(
    *,
    proposal_id: int,
    user,
    text: str | None = None,
    parts=None,
    against: str = "",
) -> ProposalApplied:
    """Apply a pending proposal as it came, or ``text`` when a person edited it (both are kept:
    ``text`` in ``applied_text``). A ``DraftError`` leaves it pending and the Gem unchanged: a
    ``DraftConflict`` or a ``WakeConflict`` when what it was written against changed since.
    ``parts`` applies a draft part by part (``gem.drafts.draft_apply``); ``against`` is the
    digest of the wake text a person applied a wake text against (``wake_digest``)."""
    proposal = _pending(proposal_id)
    chosen = proposal.text if text is None else text
    with transaction.atomic():
        _claim(
            proposal,
            user=user,
            state=ProposalState.APPLIED,
            applied_text="" if chosen == proposal.text else chosen,
        )
        if proposal.kind == ProposalKind.DRAFT:
            return ProposalApplied(
                proposal,
                diff=draft_apply(
                    chosen,
                    user=user,
                    events_found=source_events,
                    base=proposal.base,
                    parts=parts,
                ),
            )
        added = ADDED_TO[proposal.kind]
        before = added.current()
        after = text_added(before, chosen, replaces=added.replaces)
        if after == before:  # the text in use holds it already: no second copy of it
            return ProposalApplied(proposal)
        if against:
            if wake_digest(before) != against:
                raise WakeConflict(base=proposal.base, now=before, what=added.what)
        elif proposal.base and before != proposal.base:
            raise WakeConflict(base=proposal.base, now=before, what=added.what)
        wake = text_version_add(model=added.model, content=after, author=user, **added.text)
        LogEntry.objects.log_actions(
            user.pk,
            [wake],
            ADDITION,
            f"New version from an import: {text_change_summary(before, wake.content)}",
            single_object=True,
        )
    return ProposalApplied(proposal, wake=wake)


def proposal_drop(*, proposal_id: int, user) -> ImportedProposal:
    """Drop a pending proposal: nothing of it is written."""
    proposal = _pending(proposal_id)
    _claim(proposal, user=user, state=ProposalState.DROPPED, applied_text="")
    return proposal


def _pending(proposal_id: int) -> ImportedProposal:
    proposal = ImportedProposal.objects.select_related("decided_by").filter(pk=proposal_id).first()
    if proposal is None:
        raise ProposalError(f"There is no proposal {proposal_id}.")
    if proposal.state != ProposalState.PENDING:
        raise _decided(proposal)
    return proposal


def _claim(proposal: ImportedProposal, *, user, state: str, applied_text: str) -> None:
    """Mark ``proposal`` decided, unless someone decided it since it was read."""
    now = timezone.now()
    claimed = ImportedProposal.objects.filter(pk=proposal.pk, state=ProposalState.PENDING).update(
        state=state, decided_at=now, decided_by=user, applied_text=applied_text
    )
    if not claimed:
        proposal.refresh_from_db()
        raise _decided(proposal)
    proposal.state, proposal.decided_at, proposal.decided_by = state, now, user
    proposal.applied_text = applied_text


def _decided(proposal: ImportedProposal) -> ProposalError:
    who = f" by {proposal.decided_by}" if proposal.decided_by else ""
    on = f" on {when(proposal.decided_at)}" if proposal.decided_at else ""
    return ProposalError(f"{quoted(proposal.title)} was already {proposal.state}{who}{on}.")
