"""From a message to memory: the event log first, then working memory by the creation policy.

Who may create what (SPEC "Tag language"): the person (chat page buttons) creates plans and
pins; the companion creates feelings, thoughts and descs. Either may resolve or cancel a plan
and drop a pin. Any other tag stays an inert event tag. A tag that repeats an active item word
for word refreshes it (the retag that resets its decay) instead of adding a copy.
"""

import logging
from dataclasses import asdict, dataclass, field
from datetime import datetime

from django.db import connections, router, transaction

from events.models import Event, EventTag
from events.parse import CANCEL, DROP, RESOLVE, KnowledgeItem, ParsedMessage, parse
from events.render import COMPANION, USER
from gem.models import IngestRecord
from gem.selectors import identities_current
from gem.services import WorkingMemoryError, working_memory_create, working_memory_match_set

logger = logging.getLogger(__name__)

CREATORS = {USER: {"plan", "pin"}, COMPANION: {"feeling", "thought", "desc"}}


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


def working_memory_take_up(
    items: list[KnowledgeItem], *, event: Event, side: str, turn: int
) -> IngestResult:
    """Apply knowledge tags of ``event`` by the creation policy, as a new message's are, with no
    ingest record: a correction's new words (``heart.corrections``), which may come after the
    event was first ingested."""
    result = IngestResult()
    with transaction.atomic():
        for item in items:
            _ingest_item(item, event=event, side=side, turn=turn, result=result)
    return result


def _ingest_item(item: KnowledgeItem, *, event: Event, side: str, turn: int, result) -> None:
    if item.lifecycle:
        status = LIFECYCLE_STATUS[item.lifecycle]
        match = working_memory_match_set(
            type=item.kind,
            words=item.text,
            status=status,
            reason=f"{item.kind} {item.lifecycle} in event {event.pk}",
            now=event.ts,
        )
        if match is None:
            result.ignored.append(f"{item.kind} {item.lifecycle}: no active {item.kind} matches")
        else:
            result.resolved.append(match)
        return
    if item.kind not in CREATORS.get(side, set()):
        result.ignored.append(f"{item.kind}: the {side} side does not create {item.kind} items")
        return
    try:
        written = working_memory_create(
            type=item.kind,
            content=item.text,
            subject=item.subject,
            actor=event.actor,
            at=event.ts,
            turn=turn,
            event_id=event.pk,
        )
    except WorkingMemoryError as error:  # a tag with nothing to keep ("<desc>her:</desc>")
        result.ignored.append(f"{item.kind}: {error}")
        return
    result.superseded.extend(written.superseded)
    (result.refreshed if written.refreshed else result.created).append(written.item.pk)


LIFECYCLE_STATUS = {RESOLVE: "resolved", CANCEL: "dropped", DROP: "dropped"}
