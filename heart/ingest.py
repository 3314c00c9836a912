"""From a message to memory: the event log first, then working memory by the creation policy.

Who may create what (SPEC "Tag language"): the person (chat page buttons) creates plans and
pins; the companion creates feelings, thoughts and descs. Either may resolve or cancel a plan
and drop a pin. Any other tag stays an inert event tag. A tag that repeats an active item word
for word refreshes it (the retag that resets its decay) instead of adding a copy.
"""

import logging
import re
from dataclasses import asdict, dataclass, field
from datetime import datetime

from django.conf import settings
from django.db import connections, router, transaction

from gem.models import Fragment, IngestRecord, WorkingMemory, WorkingMemoryRef
from gem.selectors import identities_current
from heart.due import due_from_text
from heart.models import Event, EventTag
from heart.parse import CANCEL, DROP, RESOLVE, KnowledgeItem, ParsedMessage, best_match, parse

logger = logging.getLogger(__name__)

USER, COMPANION = "user", "companion"
CREATORS = {USER: {"plan", "pin"}, COMPANION: {"feeling", "thought", "desc"}}
FEELING_WORD_CAP = 15
KEY_CANDIDATE = re.compile(r"[\w][\w'-]*")


@dataclass
class IngestResult:
    created: list[int] = field(default_factory=list)
    refreshed: list[int] = field(default_factory=list)
    resolved: list[int] = field(default_factory=list)
    superseded: list[int] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)  # tags kept only as event tags, and why


def event_record(
    *,
    text: str,
    actor: str,
    ts: datetime,
    image: str = "",
    identities: list[str] | None = None,
    parsed: ParsedMessage | None = None,
) -> tuple[Event, ParsedMessage]:
    """Write a message to the log with its tags, exactly as written. Nothing runs before this.

    ``parsed``: the text already parsed with the current identities, when the caller has it.
    """
    if parsed is None:
        names = identities_current().names if identities is None else identities
        parsed = parse(text, identities=names)
    # Inside a caller's transaction no savepoint is needed: a failure here fails it whole.
    with transaction.atomic(using="events", savepoint=False):
        event = Event.objects.create(ts=ts, content=text, actor=actor, image=image)
        _event_tags_insert(event_id=event.pk, tags=sorted(parsed.tags))
    return event, parsed


def _event_tags_insert(*, event_id: int, tags: list[str]) -> None:
    """The tags in one plain INSERT: every turn logs two messages, and the ORM's bulk insert
    takes longer to prepare than the database to run."""
    if not tags:
        return
    rows = ", ".join(["(%s, %s)"] * len(tags))
    with connections[router.db_for_write(EventTag)].cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {EventTag._meta.db_table} (event_id, tag) VALUES {rows}",
            [value for tag in tags for value in (event_id, tag)],
        )


def working_memory_ingest(
    *, parsed: ParsedMessage, event: Event, side: str, turn: int
) -> IngestResult:
    """Apply a message's knowledge tags to working memory, once per event (retries are safe)."""
    result = IngestResult()
    if not parsed.knowledge:
        return result  # nothing to ingest, nothing to record
    with transaction.atomic():
        # SQLite's IMMEDIATE transaction (PostgreSQL: the one turn running at a time) keeps
        # two ingests of one event from passing this check together.
        if IngestRecord.objects.filter(event_id=event.pk).exists():
            return result
        for item in parsed.knowledge:
            _ingest_item(item, event=event, side=side, turn=turn, result=result)
        IngestRecord.objects.create(event_id=event.pk, changes=asdict(result))
    return result


def _ingest_item(item: KnowledgeItem, *, event: Event, side: str, turn: int, result) -> None:
    if item.lifecycle:
        _apply_lifecycle(item, event=event, result=result)
        return
    if item.kind not in CREATORS.get(side, set()):
        result.ignored.append(f"{item.kind}: the {side} side does not create {item.kind} items")
        return
    content = item.text
    if item.kind == "feeling":
        content = " ".join(content.split()[:FEELING_WORD_CAP])
    existing = (
        WorkingMemory.objects.filter(
            status="active", type=item.kind, content=content, subject=item.subject
        )
        .values_list("pk", flat=True)
        .first()
    )
    if existing:
        WorkingMemory.objects.filter(pk=existing).update(refreshed_at=event.ts, turn=turn)
        result.refreshed.append(existing)
        return
    if item.kind == "feeling":
        result.superseded.extend(_supersede(type="feeling", at=event.ts))
    elif item.kind == "desc" and item.subject:
        result.superseded.extend(_supersede(type="desc", at=event.ts, subject__iexact=item.subject))
    due = None
    if item.kind == "plan":
        due = due_from_text(content, written_at=event.ts, time_zone=settings.TIME_ZONE)
    created = WorkingMemory.objects.create(
        event_id=event.pk,
        type=item.kind,
        content=content,
        subject=item.subject,
        actor=event.actor,
        due=due,
        turn=turn,
        created_at=event.ts,
        refreshed_at=event.ts,
    )
    _link_fragments(created)
    result.created.append(created.pk)


def _supersede(*, type: str, at: datetime, **match) -> list[int]:
    ids = list(
        WorkingMemory.objects.filter(status="active", type=type, **match).values_list(
            "pk", flat=True
        )
    )
    WorkingMemory.objects.filter(pk__in=ids).update(status="superseded", resolved_at=at)
    return ids


LIFECYCLE_STATUS = {RESOLVE: "resolved", CANCEL: "dropped", DROP: "dropped"}


def _apply_lifecycle(item: KnowledgeItem, *, event: Event, result) -> None:
    candidates = WorkingMemory.objects.filter(status="active", type=item.kind).values_list(
        "pk", "content"
    )
    match = best_match(item.text, list(candidates))
    if match is None:
        result.ignored.append(f"{item.kind} {item.lifecycle}: no active {item.kind} matches")
        return
    WorkingMemory.objects.filter(pk=match).update(
        status=LIFECYCLE_STATUS[item.lifecycle], resolved_at=event.ts
    )
    result.resolved.append(match)


def _link_fragments(item: WorkingMemory) -> None:
    """Link the item to every fragment whose key it names (a word equal to the key)."""
    words = {w.lower() for w in KEY_CANDIDATE.findall(f"{item.subject} {item.content}")}
    keys = Fragment.objects.filter(key__in=words).values_list("key", flat=True)
    WorkingMemoryRef.objects.bulk_create(
        [WorkingMemoryRef(wm=item, fragment_id=key) for key in keys], ignore_conflicts=True
    )
