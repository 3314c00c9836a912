"""Writes of the Heart that touch several models or the outside world."""

import logging
import mimetypes
import secrets
import time
from datetime import datetime, timedelta
from functools import partial

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connections, router, transaction
from django.utils import timezone
from django_q.tasks import async_task

from gem.selectors import Identities, gem_current
from gem.state import (
    CHARS_PER_TOKEN,
    PENDING_RECALL,
    WORKING_MEMORY_FILL,
    state_get,
    state_set,
    turn_counter_advance,
)
from heart import offline
from heart.assemble import Assembly, working_memory_fill
from heart.context import context_for_event
from heart.ingest import COMPANION, USER, event_record, working_memory_ingest
from heart.models import ContextSnapshot, Event, Turn, TurnStatus
from heart.parse import ParsedMessage, parse
from silentstar import claude
from silentstar.claude import ClaudeError
from silentstar.tokens import DEFAULT_CHARS_PER_TOKEN, chars_per_token_calibrated

logger = logging.getLogger(__name__)


def owner_ensure(*, username: str, password: str | None) -> str | None:
    """Create the owner account unless it exists; return a generated password, if one was made.

    An existing owner is left as it is (its password is never reset by start-up), except that a
    password given explicitly is applied, so changing the environment variable changes it.
    """
    user_model = get_user_model()
    owner = user_model.objects.filter(username=username).first()
    if owner is not None:
        if password:
            owner.set_password(password)
            owner.save(update_fields=["password"])
        return None
    generated = None if password else secrets.token_urlsafe(12)
    user_model.objects.create_superuser(username=username, email="", password=password or generated)
    return generated


# --- Turns -------------------------------------------------------------------------------


class TurnOrderError(ValueError):
    """A turn was asked to happen before one that is already in the log."""


def user_text_compose(*, message: str, identity: str | None, knowledge_tags: list[str]) -> str:
    """The tagged text the chat page and the terminal send: knowledge tags, then the identity."""
    text = message
    for tag in reversed(knowledge_tags):
        text = f"<{tag}>{text}</{tag}>"
    return f"<{identity}>{text}</{identity}>" if identity else text


def turn_submit(
    *, text: str, actor: str, image: str = "", at: datetime | None = None, enqueue: bool = True
) -> Turn:
    """Store the person's message, ingest their plans and pins, and queue the companion's turn.

    The event is written first, before anything that can fail. ``at`` runs the turn as if at
    that moment (replays, demos of decay over days). No turn comes before the last event in the
    log, so a log that was run ahead with ``at`` takes further turns only from there on.
    """
    ts = at or timezone.now()
    last = Event.objects.order_by("-ts").values_list("ts", flat=True).first()
    if last and ts < last:
        raise TurnOrderError(
            f"A turn at {ts.isoformat()} would come before the last event in the log "
            f"({last.isoformat()}); turns happen in order."
        )
    # The identities from the process's copy of the Gem: the turn reads it next anyway.
    names = gem_current().identities.names
    event, parsed = event_record(text=text, actor=actor, ts=ts, image=image, identities=names)
    number = turn_counter_advance()
    working_memory_ingest(parsed=parsed, event=event, side=USER, turn=number)
    turn = Turn.objects.create(event=event, number=number)
    if enqueue:
        transaction.on_commit(
            lambda: async_task("heart.tasks.run_turns_task", turn.pk, group="turns"),
            using="events",
        )
    return turn


def turn_claim_next() -> Turn | None:
    """Claim the oldest queued turn, unless a turn is already running (one at a time)."""
    connection = connections["events"]
    if connection.vendor == "postgresql":
        with transaction.atomic(using="events"):
            with connection.cursor() as cursor:  # serialise claims across workers
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", [TURN_CLAIM_LOCK])
            claimed = _turn_claim_oldest(connection)
    else:  # one statement is atomic alone, and SQLite has one writer at a time
        claimed = _turn_claim_oldest(connection)
    if claimed is None:
        return None
    return Turn.objects.select_related("event").get(pk=claimed)


def _turn_claim_oldest(connection) -> int | None:
    """One statement: the oldest queued turn becomes running, unless a turn is running."""
    table = Turn._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET status = %s, started_at = %s, attempts = attempts + 1, "
            f"error = '' WHERE status = %s AND id = (SELECT id FROM {table} "
            "WHERE status = %s ORDER BY queued_at, id LIMIT 1) "
            f"AND NOT EXISTS (SELECT 1 FROM {table} WHERE status = %s) RETURNING id",
            [
                TurnStatus.RUNNING,
                connection.ops.adapt_datetimefield_value(timezone.now()),
                TurnStatus.QUEUED,
                TurnStatus.QUEUED,
                TurnStatus.RUNNING,
            ],
        )
        row = cursor.fetchone()
    return None if row is None else row[0]


TURN_CLAIM_LOCK = 7_351_001  # any constant: the advisory lock's name on PostgreSQL
PARTIAL_SAVE_INTERVAL = 0.1  # seconds between saves of the streamed text


def turn_run(*, turn: Turn) -> Turn:
    """Answer a claimed turn: assemble, call Claude, log and ingest the reply, snapshot."""
    event = turn.event
    # A turn submitted with --at keeps its distance from real time, so decay and the reply's
    # time stay consistent with the moment it is said to happen.
    offset = event.ts - turn.queued_at

    def clock() -> datetime:
        return timezone.now() + offset

    gem = gem_current()
    who = gem.identities
    try:
        assembly = context_for_event(event=event, now=clock(), current_turn=turn.number, gem=gem)
        _working_memory_fill_record(assembly)
        reply_event = turn.reply_event
        if reply_event is None:
            reply = _reply_stream(turn=turn, assembly=assembly, identities=who.names)
            reply_event, parsed = _reply_record(
                turn=turn, text=reply.text, ts=clock(), who=who, usage=reply
            )
            if not reply.offline and not event.image:  # image tokens are not text
                _chars_per_token_calibrate(assembly=assembly, usage=reply.usage)
        else:  # a retry: the reply was logged by an earlier attempt
            parsed = parse(reply_event.content, identities=who.names)
        working_memory_ingest(parsed=parsed, event=reply_event, side=COMPANION, turn=turn.number)
        state_set(
            PENDING_RECALL,
            [{"key": r.key, "deep": r.deep} for r in parsed.recalls]
            + [{"search": s.query} for s in parsed.searches],
        )
        ContextSnapshot.objects.create(
            turn=turn.pk,
            ts=clock(),
            assembled_system=assembly.system_text,
            assembled_user=assembly.user_text,
            token_counts=assembly.token_counts,
            items_included=assembly.items_included,
        )
        _turn_update(
            turn.pk,
            status=TurnStatus.DONE,
            partial_text=parsed.display_text,
            finished_at=timezone.now(),
        )
    except ClaudeError as error:
        _turn_fail(turn, str(error))
    except Exception as error:
        logger.exception("Turn %s failed", turn.pk)
        _turn_fail(turn, f"Something went wrong while answering: {type(error).__name__}: {error}")
    return Turn.objects.get(pk=turn.pk)


def _working_memory_fill_record(assembly: Assembly) -> None:
    """Keep the share of the Lingering budget this turn's working memory took: with the decay
    pressure on (``SILENTSTAR_DECAY_PRESSURE``), it shortens the turn half-lives of the next."""
    if settings.DECAY_PRESSURE:
        state_set(
            WORKING_MEMORY_FILL, working_memory_fill(assembly, settings.BUDGET_WORKING_MEMORY)
        )


def _chars_per_token_calibrate(*, assembly: Assembly, usage: claude.Usage) -> None:
    """Learn how many characters a token is from what the API counted for this context."""
    previous = state_get(CHARS_PER_TOKEN, DEFAULT_CHARS_PER_TOKEN)
    calibrated = chars_per_token_calibrated(
        previous=previous,
        characters=len(assembly.system_text) + len(assembly.user_text),
        tokens=usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens,
    )
    if calibrated != previous:
        state_set(CHARS_PER_TOKEN, calibrated)


def _reply_stream(*, turn: Turn, assembly: Assembly, identities: list[str]) -> claude.Reply:
    event = turn.event
    last_save = 0.0
    first_token_saved = turn.first_token_at is not None  # a retry keeps the first attempt's

    def on_text(text_so_far: str) -> None:
        nonlocal last_save, first_token_saved
        if time.monotonic() - last_save < PARTIAL_SAVE_INTERVAL:
            return
        last_save = time.monotonic()
        shown = parse(text_so_far, identities=identities, partial=True).display_text
        changes = {"partial_text": shown}
        if not first_token_saved:
            changes["first_token_at"] = timezone.now()
            first_token_saved = True
        _turn_update(turn.pk, **changes)

    content = list(assembly.user)
    if event.image:
        with event.image.open("rb") as image_file:
            data = image_file.read()
        media_type = mimetypes.guess_type(event.image.name)[0] or "image/jpeg"
        content.insert(len(content) - 1, claude.image_block(data=data, media_type=media_type))
    messages = [{"role": "user", "content": content}]
    return claude.complete(
        system=assembly.system,
        messages=messages,
        offline_answer=partial(offline.reply, system=assembly.system, messages=messages),
        on_text=on_text,
    )


def _reply_record(
    *, turn: Turn, text: str, ts: datetime, who: Identities, usage: claude.Reply
) -> tuple[Event, ParsedMessage]:
    """Log the reply and link it to the turn in one transaction, with what the API reported."""
    parsed = parse(text, identities=who.names)
    with transaction.atomic(using="events"):
        reply_event, _ = event_record(
            text=text,
            actor=parsed.identity or who.default_companion,
            ts=ts,
            parsed=parsed,
        )
        _turn_update(
            turn.pk,
            reply_event=reply_event.pk,
            model=usage.model,
            input_tokens=usage.usage.input_tokens,
            output_tokens=usage.usage.output_tokens,
            cache_read_tokens=usage.usage.cache_read_tokens,
            cache_write_tokens=usage.usage.cache_write_tokens,
        )
    return reply_event, parsed


def _turn_fail(turn: Turn, reason: str) -> None:
    _turn_update(turn.pk, status=TurnStatus.ERROR, error=reason, finished_at=timezone.now())


def _turn_update(turn_id: int, **changes) -> None:
    """``Turn.objects.filter(pk=turn_id).update(**changes)`` (a foreign key by its id) in
    plain SQL: a turn writes its row three times, and the ORM takes longer to build each of
    these statements than the database takes to run it."""
    connection = connections[router.db_for_write(Turn)]
    fields = [Turn._meta.get_field(name) for name in changes]
    assignments = ", ".join(f"{connection.ops.quote_name(field.column)} = %s" for field in fields)
    values = [
        field.get_db_prep_save(value, connection)
        for field, value in zip(fields, changes.values(), strict=True)
    ]
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {Turn._meta.db_table} SET {assignments} WHERE id = %s", [*values, turn_id]
        )


def turn_retry(*, turn_id: int, enqueue: bool = True) -> Turn:
    """Queue a failed turn again. Its reply, if it was already logged, is not written twice."""
    updated = Turn.objects.filter(pk=turn_id, status=TurnStatus.ERROR).update(
        status=TurnStatus.QUEUED, error="", finished_at=None
    )
    if not updated:
        raise ValueError(f"Turn {turn_id} has not failed, so there is nothing to retry")
    if enqueue:
        async_task("heart.tasks.run_turns_task", turn_id, group="turns")
    return Turn.objects.get(pk=turn_id)


def turns_recover(*, stale_after: timedelta) -> list[int]:
    """Requeue turns left ``running`` by a worker that died; give up after the attempt limit."""
    cutoff = timezone.now() - stale_after
    stale = list(Turn.objects.filter(status=TurnStatus.RUNNING, started_at__lt=cutoff))
    requeued = []
    for turn in stale:
        if turn.attempts >= settings.Q_CLUSTER["max_attempts"]:
            Turn.objects.filter(pk=turn.pk, status=TurnStatus.RUNNING).update(
                status=TurnStatus.ERROR,
                error=f"The worker stopped while answering, {turn.attempts} times; retry by hand.",
                finished_at=timezone.now(),
            )
        elif Turn.objects.filter(pk=turn.pk, status=TurnStatus.RUNNING).update(
            status=TurnStatus.QUEUED
        ):
            requeued.append(turn.pk)
    return requeued


def snapshots_prune(*, older_than: datetime) -> int:
    """Delete context snapshots taken before ``older_than``; return how many went."""
    deleted, _ = ContextSnapshot.objects.filter(ts__lt=older_than).delete()
    return deleted
