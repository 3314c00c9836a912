"""Mira's JSONL memory (seed ``003_…``) in and out: conversations as events, the rest as working
memory (docs/mira.md gives the mapping field by field).

An imported entry is kept exactly as it was read (``gem.models.MiraEntry``), so an export gives
back every field, the values changed here since merged over it. An item or event born here is
exported as an entry built from its fields, with an id of its own ("wm_12", "event_34").

Import follows Mira's deduplication: an entry that means the same as an active item of its type
(the same semantic hash) refreshes that item instead of adding one, and one that nearly repeats an
active item is written and flagged for review in the Anvil. Every line is read and checked before
anything is written; a refused file writes nothing.
"""

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TextIO

from django.db import transaction
from django.db.models import Q
from django.utils.text import Truncator

from events.models import Event, EventTag, Turn
from gem.importance import BASE, INTENSITY_WEIGHT, valence_of
from gem.meaning import semantic_hash
from gem.models import (
    MiraEntry,
    WorkingMemory,
    WorkingMemoryRef,
    WorkingMemoryStatus,
    WorkingMemoryType,
)
from gem.selectors import identities_current
from gem.services import WorkingMemoryRecorded, working_memory_create
from heart.ingest import event_record
from transfer.limits import LINE_MAX_CHARS, NestedTooDeep, json_loaded, json_problem, lines_bounded

CONVERSATION = "conversation"
MIRA_TYPES = (
    "thought",
    "observation",
    "insight",
    CONVERSATION,
    "research",
    "draft",
    "action",
    "emotion",
)
# Mira's fields in her order; entries are written out in it, any field of her own after them.
FIELDS = (
    "id",
    "timestamp",
    "session_id",
    "type",
    "content",
    "summary",
    "tags",
    "importance",
    "emotional_valence",
    "semantic_hash",
    "refs",
    "source",
)
OPTIONAL_FIELDS = {"emotional_valence", "source"}

# Her types as working memory, and back (docs/mira.md says why each).
WM_TYPE_OF = {
    "thought": WorkingMemoryType.THOUGHT,
    "observation": WorkingMemoryType.DESC,
    "insight": WorkingMemoryType.PATTERN,
    "research": WorkingMemoryType.DESC,
    "draft": WorkingMemoryType.THOUGHT,
    "action": WorkingMemoryType.PLAN,
    "emotion": WorkingMemoryType.FEELING,
}
MIRA_TYPE_OF = {
    WorkingMemoryType.FEELING: "emotion",
    WorkingMemoryType.THOUGHT: "thought",
    WorkingMemoryType.PATTERN: "insight",
    WorkingMemoryType.DESC: "observation",
    WorkingMemoryType.PLAN: "action",
    WorkingMemoryType.PIN: "thought",
    WorkingMemoryType.SECRET: "thought",
}
PERMANENT, URGENT, SECRET = "permanent", "urgent", "secret"
# The tag that says the type here where Mira's type cannot.
TYPE_TAG = {
    WorkingMemoryType.FEELING: "emotion",
    WorkingMemoryType.PATTERN: "insight",
    WorkingMemoryType.PIN: PERMANENT,
    WorkingMemoryType.SECRET: SECRET,
}
MIRA_ACTOR = "mira"
MAX_ID, MAX_TAG = 200, 64  # MiraEntry.mira_id, EventTag.tag
SUMMARY_CHARS = 120
OWN_ID = re.compile(r"^(wm|event)_(\d+)$")
SENTENCE_END = re.compile(r"(?<=[.!?])\s")


class MiraError(ValueError):
    """A Mira file that cannot be imported; the message names each line and field at fault."""


@dataclass
class MiraImport:
    """What an import did, entry by entry (Mira ids)."""

    events: list[str] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    refreshed: list[str] = field(default_factory=list)
    flagged: list[str] = field(default_factory=list)
    already_here: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return (
            f"{len(self.events)} conversation entries logged as events, "
            f"{len(self.written)} written as working memory "
            f"({len(self.flagged)} flagged as near duplicates), "
            f"{len(self.refreshed)} refreshed an active item of the same meaning, "
            f"{len(self.already_here)} already here."
        )


# --- reading -------------------------------------------------------------------------------------


def mira_entries_read(stream: TextIO) -> list[dict]:
    """Every entry of a Mira JSONL text, checked; blank lines are skipped.

    Raises ``MiraError`` naming every line and field at fault.
    """
    entries: list[dict] = []
    errors: list[str] = []
    first_line_of: dict[str, int] = {}
    for number, line in lines_bounded(stream):
        if line is None:
            errors.append(f"line {number}: longer than {LINE_MAX_CHARS:,} characters")
            continue
        if not line.strip():
            continue
        try:
            entry = json_loaded(line)
        except json.JSONDecodeError as error:
            errors.append(f"line {number}: not JSON ({error.msg}, column {error.colno})")
            continue
        except NestedTooDeep as error:
            errors.append(f"line {number}: {error}")
            continue
        if not isinstance(entry, dict):
            errors.append(f"line {number}: not a JSON object")
            continue
        problems = _entry_problems(entry)
        mira_id = entry.get("id")
        if isinstance(mira_id, str) and mira_id in first_line_of:
            problems.append(f"id: “{mira_id}” is already on line {first_line_of[mira_id]}")
        elif isinstance(mira_id, str):
            first_line_of[mira_id] = number
        errors += [f"line {number}: {problem}" for problem in problems]
        entries.append(entry)
    if errors:
        raise MiraError("\n".join(errors))
    return entries


def _is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _entry_problems(entry: dict) -> list[str]:
    """What is wrong with one entry, field by field."""
    problems = [
        f"{name}: missing" for name in FIELDS if name not in entry and name not in OPTIONAL_FIELDS
    ]
    checks = {
        "id": (
            lambda v: isinstance(v, str) and len(v.strip()) > 0 and len(v) <= MAX_ID,
            f"must be a text of 1 to {MAX_ID} characters",
        ),
        "timestamp": (
            _is_moment,
            "must be an ISO 8601 time with its offset (2026-02-01T14:30:00Z)",
        ),
        "session_id": (lambda v: isinstance(v, str), "must be a text"),
        "type": (lambda v: v in MIRA_TYPES, f"must be one of {', '.join(MIRA_TYPES)}"),
        "content": (lambda v: isinstance(v, str) and v.strip() != "", "must be a text, not empty"),
        "summary": (lambda v: isinstance(v, str), "must be a text"),
        "tags": (
            lambda v: (
                isinstance(v, list) and all(isinstance(t, str) and 0 < len(t) <= MAX_TAG for t in v)
            ),
            f"must be a list of tags (texts of 1 to {MAX_TAG} characters)",
        ),
        "importance": (lambda v: _is_number(v) and 0 <= v <= 1, "must be a number from 0 to 1"),
        "emotional_valence": (
            lambda v: v is None or (_is_number(v) and -1 <= v <= 1),
            "must be a number from -1 to 1, or null",
        ),
        "semantic_hash": (lambda v: isinstance(v, str), "must be a text"),
        "refs": (
            lambda v: isinstance(v, list) and all(isinstance(r, str) for r in v),
            "must be a list of entry ids",
        ),
        "source": (lambda v: v is None or isinstance(v, str), "must be a text or null"),
    }
    for name, (valid, expected) in checks.items():
        if name in entry and not valid(entry[name]):
            problems.append(f"{name}: {expected}, not {json.dumps(entry[name])[:60]}")
    # Every field is kept in the entry as it was read, her own ones too.
    problems += [
        f"{name}: {problem}"
        for name, value in entry.items()
        if (problem := json_problem(name) or json_problem(value))
    ]
    return problems


def _moment(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _is_moment(value) -> bool:
    if not isinstance(value, str):
        return False
    try:
        return _moment(value).tzinfo is not None
    except ValueError:
        return False


# --- import --------------------------------------------------------------------------------------


def mira_import(stream: TextIO) -> MiraImport:
    """Import a Mira JSONL text: every line checked first, then written in one transaction per
    store. Conversations come first, so that working memory can name the events it came from.

    An entry already imported (its Mira id), or one exported from here and still here, adds
    nothing: importing a file twice is safe.
    """
    entries = mira_entries_read(stream)
    done = MiraImport()
    known = set(
        MiraEntry.objects.filter(mira_id__in=[e["id"] for e in entries]).values_list(
            "mira_id", flat=True
        )
    )
    fresh = []
    for entry in entries:
        if entry["id"] in known or _still_here(entry):
            done.already_here.append(entry["id"])
        else:
            fresh.append(entry)
    names = set(identities_current().names)
    with transaction.atomic(), transaction.atomic(using="events"):
        for entry in fresh:
            if entry["type"] == CONVERSATION:
                _conversation_import(entry, names=names)
                done.events.append(entry["id"])
        event_of = _events_of_ids({ref for entry in fresh for ref in entry["refs"]})
        for entry in fresh:
            if entry["type"] != CONVERSATION:
                _memory_import(entry, event_of=event_of, done=done)
    return done


def _still_here(entry: dict) -> bool:
    """Whether an entry exported from here names an item or event that is still here, unchanged
    in meaning (another installation's "wm_12" is another item)."""
    match = OWN_ID.match(entry["id"])
    if match is None:
        return False
    kind, pk = match.group(1), int(match.group(2))
    if kind == "event":
        return Event.objects.filter(pk=pk, content=entry["content"]).exists()
    return WorkingMemory.objects.filter(
        pk=pk, semantic_hash=semantic_hash(entry["content"])
    ).exists()


def _conversation_import(entry: dict, *, names: set[str]) -> None:
    """A conversation entry becomes an event, said by the identity its tags name (else Mira),
    with her tags as event tags."""
    actor = next((tag for tag in entry["tags"] if tag in names), MIRA_ACTOR)
    event, _ = event_record(text=entry["content"], actor=actor, ts=_moment(entry["timestamp"]))
    EventTag.objects.bulk_create(
        [EventTag(event=event, tag=tag) for tag in dict.fromkeys(entry["tags"])],
        ignore_conflicts=True,
    )
    MiraEntry.objects.create(mira_id=entry["id"], event_id=event.pk, entry=entry)


def _events_of_ids(ids: set[str]) -> dict[str, int]:
    """The events that Mira ids name: conversations imported, or events exported from here."""
    found = dict(
        MiraEntry.objects.filter(mira_id__in=ids, event_id__isnull=False).values_list(
            "mira_id", "event_id"
        )
    )
    own = {
        int(match.group(2)): ref
        for ref in ids - found.keys()
        if (match := OWN_ID.match(ref)) and match.group(1) == "event"
    }
    for pk in Event.objects.filter(pk__in=own).values_list("pk", flat=True):
        found[own[pk]] = pk
    return found


def _wm_type(entry: dict) -> tuple[str, str]:
    """The type and status a non-conversation entry takes here."""
    tags = set(entry["tags"])
    if PERMANENT in tags:
        return WorkingMemoryType.PIN, WorkingMemoryStatus.ACTIVE
    if SECRET in tags:
        return WorkingMemoryType.SECRET, WorkingMemoryStatus.ACTIVE
    if entry["type"] == "action":  # a record of what was done, unless it still asks for action
        status = WorkingMemoryStatus.ACTIVE if URGENT in tags else WorkingMemoryStatus.RESOLVED
        return WorkingMemoryType.PLAN, status
    return WM_TYPE_OF[entry["type"]], WorkingMemoryStatus.ACTIVE


def _memory_import(entry: dict, *, event_of: dict[str, int], done: MiraImport) -> None:
    type, status = _wm_type(entry)
    at = _moment(entry["timestamp"])
    # Mira's rules for duplicates are the tag language's: an exact one is not added, the one
    # there is refreshed; a near one is added and flagged.
    write = working_memory_create(
        type=type,
        content=entry["content"],
        actor=MIRA_ACTOR,
        at=at,
        turn=None,
        recorded=WorkingMemoryRecorded(
            created_at=at,
            refreshed_at=at,
            status=status,
            resolved_at=None if status == WorkingMemoryStatus.ACTIVE else at,
            importance=entry["importance"],
            valence=entry.get("emotional_valence"),
            source_event_ids=tuple(event_of[ref] for ref in entry["refs"] if ref in event_of),
            deduplicated=True,
        ),
    )
    written = write.item
    if write.refreshed:
        MiraEntry.objects.create(mira_id=entry["id"], working_memory=written, entry=entry)
        done.refreshed.append(entry["id"])
        return
    MiraEntry.objects.create(
        mira_id=entry["id"],
        working_memory=written,
        entry=entry,
        written={
            "type": written.type,
            "content": written.content,
            "importance": written.importance,
            "valence": written.valence,
        },
    )
    done.written.append(entry["id"])
    if written.near_duplicate_of_id is not None:
        done.flagged.append(entry["id"])


# --- export --------------------------------------------------------------------------------------


def mira_export(*, since: datetime | None = None) -> Iterator[dict]:
    """Every event and working-memory item as Mira entries, oldest first (``since``: from then).

    An entry imported from Mira comes back as it was, with the values changed here since over
    it; everything else gets an entry built from its fields.
    """
    kept = list(MiraEntry.objects.select_related("working_memory"))
    entries = [_merged(row) for row in kept]
    mira_id_of_item = {row.working_memory_id: row.mira_id for row in kept if row.written}
    mira_id_of_event = {row.event_id: row.mira_id for row in kept if row.event_id is not None}
    items = WorkingMemory.objects.exclude(pk__in=mira_id_of_item)
    events = Event.objects.exclude(pk__in=mira_id_of_event)
    if since is not None:
        items, events = items.filter(created_at__gte=since), events.filter(ts__gte=since)
    entries += _items_built(
        items, mira_id_of_event=mira_id_of_event, mira_id_of_item=mira_id_of_item
    )
    entries += _events_built(events)
    if since is not None:
        entries = [entry for entry in entries if _moment(entry["timestamp"]) >= since]
    entries.sort(key=lambda entry: (_moment(entry["timestamp"]), entry["id"]))
    yield from entries


def mira_lines(entries: Iterable[dict]) -> Iterator[str]:
    """Entries as JSONL lines, Mira's fields in her order."""
    for entry in entries:
        ordered = {name: entry[name] for name in FIELDS if name in entry}
        ordered.update({name: value for name, value in entry.items() if name not in ordered})
        yield json.dumps(ordered, ensure_ascii=False) + "\n"


def _merged(row: MiraEntry) -> dict:
    """An imported entry with what changed here since over it (its content, type, numbers)."""
    entry = dict(row.entry)
    item = row.working_memory
    if not row.written or item is None:
        return entry
    was = row.written
    if item.content != was["content"]:
        entry["content"], entry["semantic_hash"] = item.content, item.semantic_hash
    if item.type != was["type"]:
        entry["type"] = MIRA_TYPE_OF[item.type]
    if item.importance != was["importance"]:
        entry["importance"] = item.importance
    if item.valence != was["valence"]:
        entry["emotional_valence"] = item.valence
    return entry


def _utc(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _summary(text: str) -> str:
    """Mira's one-sentence extract: the first sentence, shortened if long."""
    first = SENTENCE_END.split(" ".join(text.split()), maxsplit=1)[0]
    return Truncator(first).chars(SUMMARY_CHARS)


def _items_built(
    items, *, mira_id_of_event: dict[int, str], mira_id_of_item: dict[int, str]
) -> list[dict]:
    items = list(items.prefetch_related("sources").select_related("near_duplicate_of"))
    keys: dict[int, list[str]] = {}
    for wm_id, key in WorkingMemoryRef.objects.filter(wm__in=items).values_list(
        "wm_id", "fragment_id"
    ):
        keys.setdefault(wm_id, []).append(key)
    built = []
    for item in items:
        tags = [TYPE_TAG[item.type]] if item.type in TYPE_TAG else []
        if item.type == WorkingMemoryType.PLAN and item.status == WorkingMemoryStatus.ACTIVE:
            tags.append(URGENT)
        sources = [source.event_id for source in item.sources.all()]
        if not sources and item.event_id is not None:
            sources = [item.event_id]
        refs = [mira_id_of_event.get(pk, f"event_{pk}") for pk in sources]
        if item.near_duplicate_of_id is not None:
            twin = item.near_duplicate_of_id
            refs.append(mira_id_of_item.get(twin, f"wm_{twin}"))
        built.append(
            {
                "id": f"wm_{item.pk}",
                "timestamp": _utc(item.created_at),
                "session_id": "" if item.turn is None else f"turn_{item.turn}",
                "type": MIRA_TYPE_OF[item.type],
                "content": item.content,
                "summary": item.subject or _summary(item.content),
                "tags": tags + sorted(keys.get(item.pk, [])),
                "importance": item.importance,
                "emotional_valence": item.valence,
                "semantic_hash": item.semantic_hash,
                "refs": refs,
                "source": None,
            }
        )
    return built


def _events_built(events) -> list[dict]:
    rows = list(events.values_list("pk", "ts", "actor", "content", "image"))
    ids = [row[0] for row in rows]
    tags: dict[int, list[str]] = {}
    for event_id, tag in EventTag.objects.filter(event_id__in=ids).values_list("event_id", "tag"):
        tags.setdefault(event_id, []).append(tag)
    turn_of: dict[int, int] = {}
    for asked, answered, number in Turn.objects.filter(
        Q(event_id__in=ids) | Q(reply_event_id__in=ids)
    ).values_list("event_id", "reply_event_id", "number"):
        turn_of[asked] = number
        if answered is not None:
            turn_of[answered] = number
    built = []
    for pk, ts, actor, content, image in rows:
        valence = valence_of(content)
        event_tags = [CONVERSATION, *([actor] if actor else []), *sorted(tags.get(pk, []))]
        built.append(
            {
                "id": f"event_{pk}",
                "timestamp": _utc(ts),
                "session_id": f"turn_{turn_of[pk]}" if pk in turn_of else "",
                "type": CONVERSATION,
                "content": content,
                "summary": _summary(content),
                "tags": list(dict.fromkeys(event_tags)),
                # Mira's scoring of an entry with no tag that boosts it: her base and intensity.
                "importance": round(min(1.0, BASE + abs(valence) * INTENSITY_WEIGHT), 2),
                "emotional_valence": valence,
                "semantic_hash": semantic_hash(content),
                "refs": [],
                "source": image or None,
            }
        )
    return built
