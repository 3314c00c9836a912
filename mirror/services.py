"""The suggestion queue: an agent stages suggestions, a person edits one while it waits, then
promotes it into working memory or rejects it.

Every proposer stages through ``suggestions_stage`` (the Mirror from a summary, the Compass its
plans, the Loom's Weaver its patterns, an import the memories of a file); no other code writes a
new suggestion.

Suggestions live in the ``summaries`` store and working memory in ``default``: the suggestion is
claimed first (pending → decided, so it can be acted on once), then the item is written with the
events it came from (``WorkingMemorySource``), as said by whoever said its words there (the
Mirror when they are its own); if that fails the claim is undone. Each decision is written in the
admin log, under the person who made it.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.contrib.admin.models import ADDITION, CHANGE, LogEntry
from django.db import transaction
from django.utils import timezone

from events.models import Event
from events.render import COMPANION
from gem.match import content_words, word_overlap
from gem.models import Forgotten, WorkingMemory, WorkingMemorySource, WorkingMemoryType
from gem.selectors import identities_current
from gem.services import WorkingMemoryError, words_forget, working_memory_create
from gem.state import turn_counter_current
from mirror.models import Proposer, SuggestionStatus, Summary, TagSuggestion
from mirror.output import DUPLICATE_OVERLAP, Suggestion, suggestions_chosen
from mirror.route import TurnEvent
from mirror.selectors import summaries_stale
from mirror.turns import events_between

EDITABLE = ("type", "content", "subject", "due", "hidden")


class SuggestionError(ValueError):
    """A suggestion that cannot be acted on, and why."""


@dataclass(frozen=True, slots=True)
class Staged(Suggestion):
    """A suggestion to stage: its type, content and subject as the tag language says them, and
    what a proposer may add: when a plan is due, whether it is hidden, why it is proposed, and
    when (an import keeps the time a memory was remembered; none: now)."""

    due: datetime | None = None
    hidden: bool = False
    reason: str = ""
    at: datetime | None = None


def suggestions_stage(
    *,
    proposer: str,
    suggestions: Sequence[Staged],
    summary: Summary | None = None,
    cap: int | None = None,
) -> list[TagSuggestion]:
    """Stage ``suggestions`` of ``proposer`` as pending suggestions in one INSERT, and return
    the rows written, in the order given (their ids set).

    ``summary`` is the one the Mirror read them in: a Mirror suggestion comes from one, another
    proposer's from none. None whose words nearly repeat words a person forgot is staged
    (``gem.models.Forgotten``). With ``cap`` (the Mirror's), at most that many are staged, pins
    first, and none whose words nearly repeat an active working-memory item, a pending
    suggestion or one chosen before it (``mirror.output.suggestions_chosen``); without, every
    one is staged as given. Every suggestion is checked before anything is written: an unknown
    type, a due date without its time zone, or a hidden suggestion that is not a plan with a
    due date raises ``SuggestionError`` and nothing is staged.

    It runs in the caller's transaction of the ``summaries`` store when there is one, so a
    caller's own records of what it staged (the Compass's proposals, an import's markers) are
    written with the suggestions or not at all."""
    if proposer not in Proposer.values:
        raise SuggestionError(f"“{proposer}” is not one of the proposers of suggestions.")
    if proposer == Proposer.MIRROR and summary is None:
        raise SuggestionError("A Mirror suggestion comes from a summary.")
    if proposer != Proposer.MIRROR and summary is not None:
        raise SuggestionError("Only the Mirror's suggestions come from a summary.")
    for number, suggestion in enumerate(suggestions, start=1):
        _check(suggestion, number)
    suggestions = _not_forgotten(suggestions)
    if not suggestions or cap == 0:
        return []
    now = timezone.now()
    with transaction.atomic(using="summaries"):
        if cap is not None:
            active, pending = _known()
            suggestions = suggestions_chosen(suggestions, active=active, pending=pending, cap=cap)
        return TagSuggestion.objects.bulk_create(
            TagSuggestion(
                proposer=proposer,
                summary=summary,
                type=suggestion.type,
                content=suggestion.content,
                subject=suggestion.subject,
                due=suggestion.due,
                hidden=suggestion.hidden,
                reason=suggestion.reason,
                created_at=suggestion.at or now,
            )
            for suggestion in suggestions
        )


def suggestion_edit(*, suggestion_id: int, edits: dict) -> TagSuggestion:
    """Change a pending suggestion's ``edits`` (any of ``EDITABLE``) before a person decides on
    it: refused in words when an edit is not one a suggestion can hold, or when the suggestion
    was decided meanwhile."""
    _edits_check(edits)
    with transaction.atomic(using="summaries"):
        suggestion = TagSuggestion.objects.select_for_update().filter(pk=suggestion_id).first()
        if suggestion is None:
            raise SuggestionError(f"There is no suggestion {suggestion_id}.")
        if suggestion.status != SuggestionStatus.PENDING:
            raise SuggestionError(
                f"Suggestion {suggestion_id} was already {suggestion.status}: it keeps its words."
            )
        fields = {name: edits.get(name, getattr(suggestion, name)) for name in EDITABLE}
        _check(Staged(**fields), suggestion_id)
        TagSuggestion.objects.filter(pk=suggestion_id).update(**edits)
    suggestion.refresh_from_db()
    return suggestion


def _edits_check(edits: dict) -> None:
    unknown = set(edits) - set(EDITABLE)
    if unknown:
        raise SuggestionError(f"Only {', '.join(EDITABLE)} can be edited, not {sorted(unknown)}.")
    if "type" in edits and edits["type"] not in WorkingMemoryType.values:
        raise SuggestionError(f"“{edits['type']}” is not a working-memory type.")
    if "content" in edits and not edits["content"].strip():
        raise SuggestionError("A suggestion needs some content.")
    if edits.get("due") is not None and timezone.is_naive(edits["due"]):
        raise SuggestionError("A due date needs its time zone.")


def _check(suggestion: Staged, number: int) -> None:
    named = f"Suggestion {number} (“{suggestion.content[:60]}”)"
    if suggestion.type not in WorkingMemoryType.values:
        raise SuggestionError(f"{named}: “{suggestion.type}” is not a working-memory type.")
    if suggestion.due is not None and timezone.is_naive(suggestion.due):
        raise SuggestionError(f"{named}: a due date needs its time zone.")
    if suggestion.hidden and not (
        suggestion.type == WorkingMemoryType.PLAN and suggestion.due is not None
    ):
        raise SuggestionError(f"{named}: only a plan with a due date can be hidden.")


def _not_forgotten(suggestions: Sequence[Staged]) -> list[Staged]:
    """The suggestions whose words do not nearly repeat words a person forgot (default store,
    read apart)."""
    forgotten = list(Forgotten.objects.values_list("content", flat=True))
    return [
        suggestion
        for suggestion in suggestions
        if not any(
            word_overlap(suggestion.content, words) >= DUPLICATE_OVERLAP for words in forgotten
        )
    ]


def _not_waiting(suggestion_id: int) -> None:
    """Refuse a suggestion read in a summary written before a correction of what it covers: it
    waits with its summary, which the Mirror writes again from the corrected log."""
    summary = (
        Summary.objects.filter(suggestions__pk=suggestion_id)
        .values_list("pk", "first_event_id", "last_event_id", "created_at")
        .first()
    )
    if summary is not None and summaries_stale([summary]):
        raise SuggestionError(
            f"Suggestion {suggestion_id} was read in a summary of messages corrected since: it "
            "waits until the Mirror writes that summary again."
        )


def suggestions_withdraw(*, summary_ids: Sequence[int]) -> int:
    """Reject the pending suggestions read in these summaries, written again from the corrected
    log (``mirror.rebuild.stale_rebuilt``): the new summaries stage their own. Returns how many."""
    with transaction.atomic(using="summaries"):
        return TagSuggestion.objects.filter(
            summary_id__in=list(summary_ids), status=SuggestionStatus.PENDING
        ).update(status=SuggestionStatus.REJECTED, decided_at=timezone.now())


def _known() -> tuple[list[str], list[str]]:
    """The words of active working memory (default store) and of pending suggestions (summaries
    store), read apart and compared in Python: no query joins the two stores."""
    active = list(WorkingMemory.objects.filter(status="active").values_list("content", flat=True))
    pending = list(
        TagSuggestion.objects.filter(status=SuggestionStatus.PENDING).values_list(
            "content", flat=True
        )
    )
    return active, pending


def _claim(suggestion_id: int, status: str) -> TagSuggestion:
    with transaction.atomic(using="summaries"):
        claimed = TagSuggestion.objects.filter(
            pk=suggestion_id, status=SuggestionStatus.PENDING
        ).update(status=status, decided_at=timezone.now())
        suggestion = TagSuggestion.objects.filter(pk=suggestion_id).first()
    if suggestion is None:
        raise SuggestionError(f"There is no suggestion {suggestion_id}.")
    if not claimed:
        raise SuggestionError(f"Suggestion {suggestion_id} was already {suggestion.status}.")
    return suggestion


def _source_events(summary: Summary, words: str) -> tuple[list[TurnEvent], bool]:
    """The events of the summary's range a suggestion's ``words`` come from, oldest first, and
    whether they hold its words.

    Only the person's events count, read as the Mirror reads them (``mirror.turns``: their text
    without markup): a companion's reply (the offline one repeats the person's message back) is
    never a source. They are the events that share a content word with the suggestion; when
    none does (the Mirror put it in its own words), every one of the person's events of the
    range.
    """
    identities = identities_current()
    sides = {**identities.sides, identities.default_companion: COMPANION}
    events = events_between(summary.first_event_id, summary.last_event_id, sides=sides)
    said = [event for event in events if not event.companion]
    wanted = content_words(words)
    sharing = [
        event
        for event in said
        if wanted & content_words(" ".join(line.text for line in event.lines))
    ]
    return sharing or said, bool(sharing)


def _own_event(sources: list[TurnEvent], *, subject: str) -> TurnEvent:
    """The event an item is said at: the newest of its sources, the newest its subject said
    when the subject said any (luna's pin is hers even when renki repeats it later)."""
    said = subject.strip().casefold()
    by_subject = [event for event in sources if said and event.actor.casefold() == said]
    return (by_subject or sources)[-1]


def suggestion_promote(
    *, suggestion_id: int, user_id: int, edits: dict[str, str] | None = None
) -> WorkingMemory:
    """Turn a pending suggestion (with a person's edits) into an active working-memory item,
    each linked to the other.

    A Mirror suggestion is said at the events of its summary it comes from; a Compass or Loom
    suggestion has no event and is said by its agent. A due date that has passed by now, given
    or staged, is refused: the person gives another (a plan is never promoted overdue)."""
    edits = edits or {}
    _edits_check(edits)
    _not_waiting(suggestion_id)
    suggestion = _claim(suggestion_id, SuggestionStatus.PROMOTED)
    fields = {name: edits.get(name, getattr(suggestion, name)) for name in EDITABLE}
    now = timezone.now()
    try:
        if fields["due"] is not None and fields["due"] <= now:
            raise SuggestionError(
                f"Suggestion {suggestion_id} is due {fields['due']:%Y-%m-%d %H:%M %Z}, which has "
                "passed: give it a due date to come."
            )
        sources, event_id, said_at, actor = _said(suggestion, fields)
        with transaction.atomic():
            item = working_memory_create(
                **fields,
                actor=actor,
                at=now,
                turn=turn_counter_current(),
                event_id=event_id,
                words_at=said_at,
                suggestion_id=suggestion_id,
            ).item
            WorkingMemorySource.objects.bulk_create(
                [WorkingMemorySource(wm=item, event_id=event.event_id) for event in sources],
                ignore_conflicts=True,
            )
    except WorkingMemoryError as error:
        _unclaim(suggestion_id)
        raise SuggestionError(f"Suggestion {suggestion_id}: {error}") from error
    except Exception:
        _unclaim(suggestion_id)
        raise
    TagSuggestion.objects.filter(pk=suggestion_id).update(promoted_wm_id=item.pk, **fields)
    suggestion.refresh_from_db()
    changed = [name for name in EDITABLE if name in edits]
    LogEntry.objects.log_actions(
        user_id,
        [suggestion],
        CHANGE,
        f"Promoted to working memory item {item.pk}"
        + (f", with {', '.join(changed)} edited" if changed else ""),
    )
    LogEntry.objects.log_actions(
        user_id,
        [item],
        ADDITION,
        f"Promoted from {suggestion.proposer.title()} suggestion {suggestion_id}",
    )
    return item


def _unclaim(suggestion_id: int) -> None:
    TagSuggestion.objects.filter(pk=suggestion_id).update(
        status=SuggestionStatus.PENDING, decided_at=None
    )


def _said(
    suggestion: TagSuggestion, fields: dict
) -> tuple[list[TurnEvent], int | None, datetime | None, str]:
    """Where an item promoted from ``suggestion`` (with ``fields``) was said: its source events,
    its own event and when it was said, and by whom.

    A Mirror suggestion is said at its own event, by whoever said its words there: the Mirror
    only when they are its own. Another agent's suggestion comes from no event: its agent says
    it, now."""
    summary = suggestion.summary
    if summary is None:
        return [], None, None, suggestion.proposer
    sources, own_words = _source_events(summary, f"{fields['subject']} {fields['content']}")
    if not sources:
        event_id, said_at = _last_event(summary)
        return [], event_id, said_at, Proposer.MIRROR
    own = _own_event(sources, subject=fields["subject"])
    actor = own.actor if own_words and own.actor else Proposer.MIRROR
    return sources, own.event_id, own.ts, actor


def _last_event(summary: Summary) -> tuple[int, datetime | None]:
    """The summary's last event and when it was said (None when it is not in the event log)."""
    said_at = Event.objects.filter(pk=summary.last_event_id).values_list("ts", flat=True).first()
    return summary.last_event_id, said_at


def suggestion_reject(*, suggestion_id: int, user_id: int) -> TagSuggestion:
    suggestion = _claim(suggestion_id, SuggestionStatus.REJECTED)
    LogEntry.objects.log_actions(user_id, [suggestion], CHANGE, "Rejected")
    return suggestion


def suggestion_forget(*, suggestion_id: int, user_id: int, by: str) -> TagSuggestion:
    """Reject a pending suggestion as forgotten: its words are kept as forgotten
    (``gem.services.words_forget``), and nothing stages them again."""
    suggestion = _claim(suggestion_id, SuggestionStatus.REJECTED)
    words_forget([(suggestion.type, suggestion.content, f"suggestion #{suggestion.pk}")], by=by)
    LogEntry.objects.log_actions(user_id, [suggestion], CHANGE, f"Rejected: forgotten by {by}")
    return suggestion
