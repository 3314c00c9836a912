"""A working-memory item as one JSON object, and back: the one row format of the export and the
archive (docs/export.md names each field).

Every field is kept, with the fragments it is linked to and the events it came from, so an item
read back is the item written out. Times are ISO 8601 with their offset.
"""

from datetime import datetime

from gem.models import WorkingMemory
from gem.services import WorkingMemoryRecorded, WorkingMemoryWrite, working_memory_create

ROW_FIELDS = (
    "id",
    "type",
    "content",
    "subject",
    "actor",
    "status",
    "due",
    "turn",
    "created_at",
    "refreshed_at",
    "resolved_at",
    "event_id",
    "suggestion_id",
    "importance",
    "valence",
    "importance_edited",
    "semantic_hash",
    "near_duplicate_of",
    "fragments",
    "sources",
    "hidden",
)
# Fields added after the first exports: a row written before them reads as their default.
LATER_FIELDS = {"hidden": False}


class RowError(ValueError):
    """A row that is not a working-memory item, and why."""


def time_with_offset(value: str) -> datetime | None:
    """``value`` read as an ISO 8601 time with its offset, as the export and the archive write
    times; None when it is not one."""
    try:
        moment = datetime.fromisoformat(value)
    except (TypeError, ValueError):
        return None
    return moment if moment.tzinfo is not None else None


def _time(value: str | None, name: str) -> datetime | None:
    if value is None:
        return None
    moment = time_with_offset(value)
    if moment is None:
        raise RowError(f"{name}: “{value}” is not an ISO 8601 time with a time zone offset")
    return moment


def working_memory_row(item: WorkingMemory) -> dict:
    """The item as a JSON-ready dict of ``ROW_FIELDS``.

    Reads ``item.refs`` and ``item.sources``: prefetch them when writing many.
    """
    return {
        "id": item.pk,
        "type": item.type,
        "content": item.content,
        "subject": item.subject,
        "actor": item.actor,
        "status": item.status,
        "due": item.due.isoformat() if item.due else None,
        "turn": item.turn,
        "created_at": item.created_at.isoformat(),
        "refreshed_at": item.refreshed_at.isoformat(),
        "resolved_at": item.resolved_at.isoformat() if item.resolved_at else None,
        "event_id": item.event_id,
        "suggestion_id": item.suggestion_id,
        "importance": item.importance,
        "valence": item.valence,
        "importance_edited": item.importance_edited,
        "semantic_hash": item.semantic_hash,
        "near_duplicate_of": item.near_duplicate_of_id,
        "fragments": sorted(ref.fragment_id for ref in item.refs.all()),
        "sources": sorted(source.event_id for source in item.sources.all()),
        "hidden": item.hidden,
    }


def working_memory_from_row(row: dict, *, keep_id: bool = True) -> WorkingMemoryWrite:
    """Write a row back through the one working-memory action, exactly as it was recorded.

    ``keep_id`` False gives it a new id (and drops its near-duplicate link, which names an id).
    A row whose id is taken is not written again (``WorkingMemoryWrite.existed``). The
    semantic hash is the content's, whatever the row says.
    """
    missing = [name for name in ROW_FIELDS if name not in row and name not in LATER_FIELDS]
    if missing:
        raise RowError(
            f"missing {'field' if len(missing) == 1 else 'fields'}: {', '.join(missing)}"
        )
    return working_memory_create(
        type=row["type"],
        content=row["content"],
        subject=row["subject"],
        actor=row["actor"],
        at=_time(row["created_at"], "created_at"),
        turn=row["turn"],
        event_id=row["event_id"],
        due=_time(row["due"], "due"),
        suggestion_id=row["suggestion_id"],
        hidden=row.get("hidden", LATER_FIELDS["hidden"]),
        recorded=WorkingMemoryRecorded(
            id=row["id"] if keep_id else None,
            status=row["status"],
            created_at=_time(row["created_at"], "created_at"),
            refreshed_at=_time(row["refreshed_at"], "refreshed_at"),
            resolved_at=_time(row["resolved_at"], "resolved_at"),
            importance=row["importance"],
            valence=row["valence"],
            importance_edited=row["importance_edited"],
            near_duplicate_of=row["near_duplicate_of"] if keep_id else None,
            fragment_keys=tuple(row["fragments"]),
            source_event_ids=tuple(row["sources"]),
        ),
    )
