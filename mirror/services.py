"""The suggestion queue: a person promotes a staged suggestion into working memory, or rejects it.

Suggestions live in the ``summaries`` store and working memory in ``default``: the suggestion is
claimed first (pending → decided, so it can be acted on once), then the item is written; if that
fails the claim is undone. Each decision is written in the admin log, under the person who made it.
"""

from django.contrib.admin.models import ADDITION, CHANGE, LogEntry
from django.db import transaction
from django.utils import timezone

from gem.models import WorkingMemory, WorkingMemoryType
from gem.services import working_memory_create
from gem.state import turn_counter_current
from heart.models import Event
from mirror.models import SuggestionStatus, TagSuggestion

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
    said_at = (
        Event.objects.filter(pk=suggestion.summary.last_event_id)
        .values_list("ts", flat=True)
        .first()
    )
    try:
        item = working_memory_create(
            **fields,
            actor="mirror",
            at=timezone.now(),
            turn=turn_counter_current(),
            event_id=suggestion.summary.last_event_id,
            words_at=said_at,
            suggestion_id=suggestion_id,
        ).item
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


def suggestion_reject(*, suggestion_id: int, user_id: int) -> TagSuggestion:
    suggestion = _claim(suggestion_id, SuggestionStatus.REJECTED)
    LogEntry.objects.log_actions(user_id, [suggestion], CHANGE, "Rejected")
    return suggestion
