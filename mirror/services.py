"""The suggestion queue: a person promotes a staged suggestion into working memory, or rejects it.

Suggestions live in the ``summaries`` store and working memory in ``default``: the suggestion is
claimed first (pending → decided, so it can be acted on once), then the item is written with the
events it came from (``WorkingMemorySource``); if that fails the claim is undone. Each decision is
written in the admin log, under the person who made it.
"""

from datetime import datetime

from django.contrib.admin.models import ADDITION, CHANGE, LogEntry
from django.db import transaction
from django.utils import timezone

from events.models import Event
from events.render import COMPANION
from gem.match import content_words
from gem.models import WorkingMemory, WorkingMemorySource, WorkingMemoryType
from gem.selectors import identities_current
from gem.services import working_memory_create
from gem.state import turn_counter_current
from mirror.models import SuggestionStatus, Summary, TagSuggestion
from mirror.turns import events_between

EDITABLE = ("type", "content", "subject")


class SuggestionError(ValueError):
    """A suggestion that cannot be acted on, and why."""


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


def _source_events(summary: Summary, words: str) -> list[tuple[int, datetime]]:
    """The events (id, time) of the summary's range a suggestion's ``words`` come from, oldest
    first.

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
    return [(event.event_id, event.ts) for event in sharing or said]


def suggestion_promote(
    *, suggestion_id: int, user_id: int, edits: dict[str, str] | None = None
) -> WorkingMemory:
    """Turn a pending suggestion (with a person's edits) into an active working-memory item,
    each linked to the other."""
    edits = edits or {}
    unknown = set(edits) - set(EDITABLE)
    if unknown:
        raise SuggestionError(f"Only {', '.join(EDITABLE)} can be edited, not {sorted(unknown)}.")
    if "type" in edits and edits["type"] not in WorkingMemoryType.values:
        raise SuggestionError(f"“{edits['type']}” is not a working-memory type.")
    if "content" in edits and not edits["content"].strip():
        raise SuggestionError("A promoted item needs some content.")
    suggestion = _claim(suggestion_id, SuggestionStatus.PROMOTED)
    fields = {name: edits.get(name, getattr(suggestion, name)) for name in EDITABLE}
    try:
        sources = _source_events(suggestion.summary, f"{fields['subject']} {fields['content']}")
        # The item's own event is the newest its words come from, and they were said then.
        event_id, said_at = sources[-1] if sources else _last_event(suggestion.summary)
        with transaction.atomic():
            item = working_memory_create(
                **fields,
                actor="mirror",
                at=timezone.now(),
                turn=turn_counter_current(),
                event_id=event_id,
                words_at=said_at,
                suggestion_id=suggestion_id,
            ).item
            WorkingMemorySource.objects.bulk_create(
                [WorkingMemorySource(wm=item, event_id=pk) for pk, _ in sources],
                ignore_conflicts=True,
            )
    except Exception:
        TagSuggestion.objects.filter(pk=suggestion_id).update(
            status=SuggestionStatus.PENDING, decided_at=None
        )
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
        user_id, [item], ADDITION, f"Promoted from Mirror suggestion {suggestion_id}"
    )
    return item


def _last_event(summary: Summary) -> tuple[int, datetime | None]:
    """The summary's last event and when it was said (None when it is not in the event log)."""
    said_at = Event.objects.filter(pk=summary.last_event_id).values_list("ts", flat=True).first()
    return summary.last_event_id, said_at


def suggestion_reject(*, suggestion_id: int, user_id: int) -> TagSuggestion:
    suggestion = _claim(suggestion_id, SuggestionStatus.REJECTED)
    LogEntry.objects.log_actions(user_id, [suggestion], CHANGE, "Rejected")
    return suggestion
