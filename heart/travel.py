"""Time travel: the context of a past turn assembled again from the data as it was then, and
compared with the snapshot the turn kept.

The event log never changes, and the snapshot keeps the inputs that are not in the stores
(``heart.context.ContextInputs``: the moment, the turn counter, the pressure, the calibrated
characters per token, the pending recall requests, where the last Recent window started). The
rest is read as it stood at that moment: working memory created by then and still active then
(an item that left later was stamped ``resolved_at``), the summaries written by then and not yet
superseded. What nobody keeps a history of (the wake text, the ambient prose, a fragment, an
item's words or decay anchor) is read as it is now. Recent reads the log with the corrections
made by then (the snapshot keeps the newest one's id); what the search finds, and which
summaries wait to be written again, follow the log as corrected now. The corrections made
since are named beside the turn whatever it gives (``Travel.corrections``); when the two
contexts differ, the changes made since (the Anvil's log of every write, retags, corrections of
the log) are named beside the sections that differ.
"""

from dataclasses import dataclass, field
from datetime import datetime

from django.contrib.admin.models import LogEntry
from django.db.models import Q

from events.corrected import DONE
from events.models import Correction, Event, Turn
from gem.models import WorkingMemory
from gem.selectors import gem_current
from heart.assemble import Assembly
from heart.context import ContextInputs, context_assemble
from heart.inspect import sections_of
from heart.models import ContextSnapshot
from silentstar.when import when

# The admin log's entries that can change each part of a context, by model.
CHANGES_OF = {
    "system": ("gem.waketext", "gem.ambientprose", "gem.identity"),
    "Lingering": ("gem.workingmemory",),
    "Summaries": ("mirror.summary",),
    "Recalled": ("gem.fragment", "gem.fragmentedge"),
    "Recent": ("gem.identity",),
}
CORRECTED = ("Recent", "Found", "Summaries")  # the parts that read the log as corrected


@dataclass
class Travel:
    """A past turn's context assembled again, beside its snapshot."""

    snapshot: ContextSnapshot
    system: str = ""
    user: str = ""
    possible: bool = True
    why_not: str = ""
    differing: list[str] = field(default_factory=list)  # "system" and user section headings
    changes: list[str] = field(default_factory=list)  # what changed since, in sentences
    corrections: list[str] = field(default_factory=list)  # of the log, made since

    @property
    def agrees(self) -> bool:
        return self.possible and not self.differing


def snapshot_travelled(snapshot: ContextSnapshot) -> Travel:
    """Assemble the snapshot's turn again as of then, and say where and why it differs."""
    travel = Travel(snapshot)
    if not snapshot.inputs or "left_out" not in snapshot.items_included:
        travel.possible = False
        travel.why_not = (
            "This snapshot was taken before snapshots kept their inputs (the moment, the turn "
            "counter, the pending recall): it cannot be assembled again."
        )
        return travel
    turn = Turn.objects.select_related("event").filter(pk=snapshot.turn).first()
    if turn is None or turn.event is None:
        travel.possible = False
        travel.why_not = (
            f"Turn {snapshot.turn} is no longer in the log."
            if turn is None
            else f"Turn {snapshot.turn} has no message to assemble its context for."
        )
        return travel
    assembly = assembled_again(snapshot, event=turn.event)
    travel.system, travel.user = assembly.system_text, assembly.user_text
    inputs = ContextInputs.from_json(snapshot.inputs)
    travel.corrections = [_correction_said(correction) for correction in _corrections_since(inputs)]
    if travel.system != snapshot.assembled_system:
        travel.differing.append("system")
    then, now = sections_of(snapshot.assembled_user), sections_of(travel.user)
    travel.differing += [
        heading for heading in dict.fromkeys([*then, *now]) if then.get(heading) != now.get(heading)
    ]
    if travel.differing:
        moment = ContextInputs.from_json(snapshot.inputs).now
        travel.changes = changes_since(
            moment, parts=travel.differing, items=snapshot.working_memory_active()
        )
    return travel


def assembled_again(snapshot: ContextSnapshot, *, event: Event) -> Assembly:
    """The context of the snapshot's turn (whose message is ``event``) assembled again as of
    then; the snapshot must have its inputs."""
    return context_assemble(
        event=event,
        inputs=ContextInputs.from_json(snapshot.inputs),
        gem=gem_current(),
        working_memory=working_memory_then(snapshot),
        summaries_through=snapshot.items_included.get("summaries_through", 0),
    )


def working_memory_then(snapshot: ContextSnapshot) -> list[WorkingMemory]:
    """The items that were active at the snapshot's turn, as they are now."""
    return list(WorkingMemory.objects.filter(pk__in=snapshot.working_memory_active()))


def changes_since(moment: datetime, *, parts: list[str], items: list[int]) -> list[str]:
    """What was changed after ``moment`` that can change these parts of a context: the Anvil's
    logged writes to the models behind them, for Lingering, the ``items`` the turn had that
    were written again since, and for the parts that read the log, its corrections since."""
    kinds = Q()
    for label in {label for part in parts for label in CHANGES_OF.get(part, ())}:
        app_label, model = label.split(".")
        kinds |= Q(content_type__app_label=app_label, content_type__model=model)
    changes = []
    entries = (
        LogEntry.objects.filter(kinds, action_time__gt=moment)
        .select_related("content_type", "user")
        .order_by("action_time")
        if kinds
        else []
    )
    for entry in entries:
        what = entry.get_change_message() or entry.get_action_flag_display()
        changes.append(
            f"{when(entry.action_time)}: {entry.content_type.name} "
            f"“{entry.object_repr}” — {what} (in the Anvil, by {entry.user})"
        )
    if "Lingering" in parts:
        for item in WorkingMemory.objects.filter(pk__in=items, refreshed_at__gt=moment).order_by(
            "refreshed_at"
        ):
            changes.append(
                f"{when(item.refreshed_at)}: working memory #{item.pk} was written "
                "again, which moved its decay anchor"
            )
    if set(parts) & set(CORRECTED):
        changes += [
            _correction_said(correction)
            for correction in Correction.objects.filter(made_at__gt=moment).order_by("id")
        ]
    if not changes:
        changes.append(
            "Nothing recorded explains it: a fragment, the wake text or the ambient prose may "
            "have changed outside the Anvil."
        )
    return changes


def _corrections_since(inputs: ContextInputs):
    """The corrections made after the turn read the log: by id when the snapshot kept how far
    it read, else by time."""
    if inputs.corrections_through is not None:
        return Correction.objects.filter(id__gt=inputs.corrections_through).order_by("id")
    return Correction.objects.filter(made_at__gt=inputs.now).order_by("id")


def _correction_said(correction: Correction) -> str:
    return (
        f"{when(correction.made_at)}: message #{correction.event_id} was "
        f"{DONE[correction.kind]} (by {correction.made_by})"
    )
