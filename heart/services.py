"""Writes of the Heart that touch several models or the outside world."""

import logging
import mimetypes
import secrets
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from datetime import datetime, timedelta
from functools import partial

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import OperationalError, connections, router, transaction
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone
from django_q.tasks import async_task

from events.models import Event, Nudge, NudgeStatus, Turn, TurnStatus
from events.parse import ParsedMessage, parse
from gem.selectors import Identities, gem_current
from gem.state import (
    PENDING_RECALL,
    RECENT_WINDOW,
    WORKING_MEMORY_FILL,
    chars_per_token,
    chars_per_token_key,
    state_set,
    turn_counter_advance,
    turn_counter_current,
)
from heart import offline
from heart.assemble import Assembly, working_memory_fill
from heart.context import context_assemble, context_inputs
from heart.corrections import ANSWERING, reply_choose
from heart.ingest import COMPANION, USER, event_record, working_memory_ingest
from heart.models import ContextSnapshot
from heart.push import push_notify
from silentstar import claude
from silentstar.claude import ClaudeError
from silentstar.disks import disk_said, disk_trouble
from silentstar.locks import PATIENCE, lock_error, when_unlocked
from silentstar.tokens import chars_per_token_calibrated

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


def identity_default(who: Identities) -> str:
    """Who the person speaks as when they have not said: the identity of their last message,
    else the first of theirs; "" when they have none."""
    users = who.users
    if not users:
        return ""
    last = (
        Event.objects.filter(actor__in=users)
        .order_by("-id")
        .values_list("actor", flat=True)
        .first()
    )
    return last or users[0]


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

    The event is written first, before anything that can fail. Its time is taken while the
    log's write lock is held, so messages sent at once land in the order of their times and
    none is refused for arriving second; a message never comes before the last event (a clock
    set back takes the last event's time). ``at`` runs the turn as if at that moment (replays,
    demos of decay over days): a moment before the last event is refused (``TurnOrderError``),
    so a log that was run ahead with ``at`` takes further turns only from there on.
    """
    # The identities from the process's copy of the Gem: the turn reads it next anyway.
    names = gem_current().identities.names
    parsed = parse(text, identities=names)
    with transaction.atomic(using="events"):
        events_lock(EVENT_LOG_LOCK)
        last = Event.objects.order_by("-ts").values_list("ts", flat=True).first()
        now = timezone.now()
        ts = at or (max(now, last) if last else now)
        if last and ts < last:
            raise TurnOrderError(
                f"A turn at {ts.isoformat()} would come before the last event in the log "
                f"({last.isoformat()}); turns happen in order."
            )
        event, _ = event_record(text=text, actor=actor, ts=ts, image=image, parsed=parsed)
    number = turn_counter_advance()
    working_memory_ingest(parsed=parsed, event=event, side=USER, turn=number)
    turn = Turn.objects.create(event=event, number=number)
    if enqueue:
        transaction.on_commit(
            lambda: async_task("heart.tasks.run_turns_task", turn.pk, group="turns"),
            using="events",
        )
    return turn


def greeting_record(*, companion: str, text: str) -> Event | None:
    """Write the companion's greeting (``text``, tagged, said by ``companion``) as the first
    event of the log: only while nothing has been said, under the lock a message is written
    under, so a greeting is given once. None when something was said before, or ``text`` is
    empty. It answers no message: no turn is queued."""
    if not text:
        return None
    with transaction.atomic(using="events"):
        events_lock(EVENT_LOG_LOCK)
        if Event.objects.exists():
            return None
        event, _ = event_record(text=text, actor=companion, ts=timezone.now())
    return event


def turn_first_queue(*, nudge_id: int) -> Turn:
    """Queue the companion's own turn for a nudge: a turn without a message, numbered with the
    turn counter as it stands (it counts the person's messages only). Called inside the
    caller's transaction on the events store, which it queues the turn after."""
    turn = Turn.objects.create(event=None, number=turn_counter_current())
    Nudge.objects.filter(pk=nudge_id).update(turn=turn)
    transaction.on_commit(
        lambda: async_task("heart.tasks.run_turns_task", turn.pk, group="turns"), using="events"
    )
    return turn


NOT_STARTED = "Not written: you wrote first."


def turn_again(*, turn_id: int) -> Turn:
    """Ask again for the newest reply: a new turn for the same message (the turn counter does
    not move, it counts the person's messages), queued as any. Its reply, once logged, is the
    one that counts, the others set aside (``heart.corrections.reply_choose``); until then the
    reply there is counts. Refused in words for an unknown turn, one not answered yet, a reply
    that is not the newest, or a message already being answered again."""
    turn = Turn.objects.filter(pk=turn_id).first()
    if turn is None or turn.event_id is None:
        raise TurnOrderError(f"There is no reply of turn {turn_id} to ask for again.")
    if turn.status != TurnStatus.DONE:
        raise TurnOrderError("Only a reply that is in can be asked for again.")
    with transaction.atomic(using="events"):
        events_lock(EVENT_LOG_LOCK)
        if Turn.objects.filter(event_id__gt=turn.event_id).exists():
            raise TurnOrderError("Only the newest reply can be asked for again.")
        if Turn.objects.filter(event_id=turn.event_id, status__in=ANSWERING).exists():
            raise TurnOrderError("She is answering that message again already.")
        again = Turn.objects.create(event_id=turn.event_id, number=turn.number, again_of=turn)
    transaction.on_commit(
        lambda: async_task("heart.tasks.run_turns_task", again.pk, group="turns"),
        using="events",
    )
    return again


def events_lock(name: int) -> None:
    """Hold the lock ``name`` of the events store until the caller's transaction ends: on
    PostgreSQL an advisory lock; on SQLite the transaction holds the one write lock already (it
    begins IMMEDIATE)."""
    connection = connections["events"]
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [name])


def turn_claim_next() -> Turn | None:
    """Claim the oldest queued turn, unless a turn is already running (one at a time)."""
    connection = connections["events"]
    if connection.vendor == "postgresql":
        with transaction.atomic(using="events"):
            events_lock(TURN_CLAIM_LOCK)  # serialise claims across workers
            claimed = _turn_claim_oldest(connection)
    else:  # one statement is atomic alone, and SQLite has one writer at a time
        claimed = _turn_claim_oldest(connection)
    if claimed is None:
        return None
    return Turn.objects.select_related("event").get(pk=claimed)


def _turn_claim_oldest(connection) -> int | None:
    """One statement: the oldest queued turn becomes running, unless a turn is running."""
    table = Turn._meta.db_table
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET status = %s, started_at = %s, heartbeat_at = %s, "
            "attempts = attempts + 1, error = '' WHERE status = %s "
            f"AND id = (SELECT id FROM {table} WHERE status = %s ORDER BY queued_at, id LIMIT 1) "
            f"AND NOT EXISTS (SELECT 1 FROM {table} WHERE status = %s) RETURNING id",
            [
                TurnStatus.RUNNING,
                now,
                now,
                TurnStatus.QUEUED,
                TurnStatus.QUEUED,
                TurnStatus.RUNNING,
            ],
        )
        row = cursor.fetchone()
    return None if row is None else row[0]


TURN_CLAIM_LOCK = 7_351_001  # any constant: the advisory lock's name on PostgreSQL
ASKED_AGAIN = "asked again"  # who the corrections that set the earlier replies aside name
NO_MESSAGE = (
    "This turn has no message of the person's to answer, and says no reason to write first."
)
EVENT_LOG_LOCK = 7_351_002  # the lock a person's message is written under, on PostgreSQL
PARTIAL_SAVE_INTERVAL = 0.1  # seconds between saves of the streamed text (each a heartbeat)
HEARTBEAT_INTERVAL = 1.0  # seconds between heartbeats while the Claude call is silent
LOCK_PATIENCE = PATIENCE  # seconds the writes after a reply wait out a locked database, in all


class TurnStopped(BaseException):
    """The worker was asked to stop while a reply streamed; the turn went back to the queue.

    Not an ``Exception``: no ``except Exception`` on the way out (the SDK's, the Claude
    client's, the turn's own) may take it for a failed call.
    """


class TurnTakenOver(Exception):
    """This attempt at a turn lost it: it was recovered after a silence and claimed again.

    Every write of an attempt to its turn names the attempt, so the one that lost writes
    nothing more (no second reply); the attempt that took the turn over answers it.
    """


class WorkerStop:
    """A stop asked of the worker (SIGTERM, see ``heart.tasks``) while it answers turns.

    A reply still streaming is dropped at once and its turn goes back to the queue (``TurnStopped``
    is raised where the stream is read); anything else, such as the writes after a reply, is
    finished first and no further turn is claimed.
    """

    def __init__(self) -> None:
        self.requested = False
        self._streaming = False

    def request(self) -> None:
        self.requested = True
        if self._streaming:
            self._streaming = False
            raise TurnStopped

    @contextmanager
    def streaming(self) -> Iterator[None]:
        if self.requested:
            raise TurnStopped
        self._streaming = True
        try:
            yield
        finally:
            self._streaming = False


def turn_run(*, turn: Turn, stop: WorkerStop | None = None) -> Turn:
    """Answer a claimed turn: assemble, call Claude, log and ingest the reply, snapshot.

    The writes after the reply wait out a locked database (up to ``LOCK_PATIENCE`` seconds in
    all); each is safe to repeat. ``stop`` asked while the reply streams puts the turn back in
    the queue and raises ``TurnStopped``.
    """
    event = turn.event
    attempt = turn.attempts  # what the claim made it: this attempt's writes name it
    nudge = None
    if event is None:  # the companion's own turn: its nudge says why she writes first
        nudge = Nudge.objects.filter(turn=turn).first()
        # A nudge the person wrote before it was started is not written: it is looked at here,
        # when the worker takes it, not on every message the person sends.
        written_since = turn.reply_event_id is None and (
            Turn.objects.filter(event__isnull=False, queued_at__gt=turn.queued_at).exists()
        )
        if nudge is None or written_since:
            if nudge is not None:
                Nudge.objects.filter(pk=nudge.pk).update(
                    status=NudgeStatus.CANCELLED, held=NOT_STARTED
                )
            _turn_update(
                turn.pk,
                attempt=attempt,
                status=TurnStatus.ERROR,
                error=NO_MESSAGE if nudge is None else NOT_STARTED,
                finished_at=timezone.now(),
            )
            turn.refresh_from_db()
            return turn
        offset = timedelta(0)
    else:
        # A turn submitted with --at keeps its distance from real time, so decay and the
        # reply's time stay consistent with the moment it is said to happen; asked again, the
        # distance of the message's first turn.
        first_queued = (
            Turn.objects.filter(event_id=event.pk)
            .order_by("pk")
            .values_list("queued_at", flat=True)
        )
        offset = event.ts - (first_queued.first() if turn.again_of_id else turn.queued_at)

    def clock() -> datetime:
        return timezone.now() + offset

    gem = gem_current()
    who = gem.identities
    try:
        inputs = context_inputs(
            event=event,
            now=clock(),
            current_turn=turn.number,
            writing_first=nudge.said if nudge is not None else "",
        )
        assembly = context_assemble(
            event=event, inputs=inputs, gem=gem, working_memory=gem.working_memory
        )
        _when_unlocked(partial(_working_memory_fill_record, assembly))
        window = assembly.items_included["recent_window"]
        _when_unlocked(
            partial(
                state_set,
                RECENT_WINDOW,
                {"first_event": window["first_event"], "full": window["full"]},
            )
        )
        reply_event = turn.reply_event
        patience = None
        if reply_event is None:
            reply = _reply_stream(
                turn=turn, attempt=attempt, assembly=assembly, identities=who.names, stop=stop
            )
            patience = _patience()
            reply_event, parsed = _when_unlocked(
                partial(
                    _reply_record,
                    turn=turn,
                    attempt=attempt,
                    text=reply.text,
                    ts=clock(),
                    who=who,
                    usage=reply,
                ),
                until=patience,
            )
            if not reply.offline and not (event and event.image):  # image tokens are not text
                _when_unlocked(
                    partial(_chars_per_token_calibrate, assembly=assembly, usage=reply.usage),
                    until=patience,
                )
        else:  # a retry: the reply was logged by an earlier attempt
            parsed = parse(reply_event.content, identities=who.names)
        patience = patience or _patience()
        _when_unlocked(
            partial(
                working_memory_ingest,
                parsed=parsed,
                event=reply_event,
                side=COMPANION,
                turn=turn.number,
            ),
            until=patience,
        )
        recall = [{"key": r.key, "deep": r.deep} for r in parsed.recalls]
        recall += [{"search": s.query} for s in parsed.searches]
        _when_unlocked(partial(state_set, PENDING_RECALL, recall), until=patience)
        _when_unlocked(
            partial(
                ContextSnapshot.objects.create,
                turn=turn.pk,
                ts=clock(),
                assembled_system=assembly.system_text,
                assembled_user=assembly.user_text,
                token_counts=assembly.token_counts,
                items_included=assembly.items_included,
                inputs=inputs.as_json(),
            ),
            until=patience,
        )
        done = _when_unlocked(
            partial(
                _turn_update,
                turn.pk,
                attempt=attempt,
                status=TurnStatus.DONE,
                partial_text=parsed.display_text,
                finished_at=timezone.now(),
            ),
            until=patience,
        )
        if not done:
            raise TurnTakenOver
        if turn.again_of_id is not None:  # the new reply counts, the others set aside
            _when_unlocked(partial(reply_choose, turn_id=turn.pk, made_by=ASKED_AGAIN))
        if nudge is not None:  # she wrote first: to the devices that asked, once
            _nudge_pushed(nudge, reply_event=reply_event, parsed=parsed, who=who)
    except TurnStopped:
        _when_unlocked(partial(_turn_requeue, turn.pk, attempt=attempt))
        raise
    except TurnTakenOver:
        logger.warning(
            "Turn %s was taken over by a later attempt; attempt %s stops", turn.pk, attempt
        )
    except ClaudeError as error:
        _turn_fail(turn.pk, attempt, str(error))
    except Exception as error:
        logger.exception("Turn %s failed", turn.pk)
        if (trouble := disk_trouble(error)) is not None:
            reason = disk_said(trouble, stopped="Not finished", again="retry")
        else:
            reason = f"Something went wrong while answering: {type(error).__name__}: {error}"
        _turn_fail(turn.pk, attempt, reason)
    return Turn.objects.get(pk=turn.pk)


def _nudge_pushed(nudge: Nudge, *, reply_event: Event, parsed: ParsedMessage, who) -> None:
    """Tell the devices that asked that she wrote first. Her message is written whatever
    happens here: a notification that cannot be queued is said in the log, not a failed turn."""
    try:
        push_notify(
            ref=f"nudge:{nudge.pk}",
            who=reply_event.actor or who.default_companion,
            first_words=parsed.display_text,
            url=f"{reverse('heart-chat')}#event-{reply_event.pk}",
        )
    except Exception:
        logger.exception(
            "Nudge %s was written, but its notifications could not be queued", nudge.pk
        )


def _patience() -> float:
    """The moment (``time.monotonic()``) after which a locked database is no longer waited out."""
    return time.monotonic() + LOCK_PATIENCE


def _when_unlocked[T](write: Callable[[], T], *, until: float | None = None) -> T:
    """``write()``, tried again while the database is locked by another writer (a Mirror run, a
    sweep, a draft), until ``until`` (default: ``LOCK_PATIENCE`` from now)."""
    return when_unlocked(write, until=_patience() if until is None else until)


def _working_memory_fill_record(assembly: Assembly) -> None:
    """Keep the share of the Lingering budget this turn's working memory took: with the decay
    pressure on (``SILENTSTAR_DECAY_PRESSURE``), it shortens the turn half-lives of the next."""
    if settings.DECAY_PRESSURE:
        state_set(
            WORKING_MEMORY_FILL, working_memory_fill(assembly, settings.BUDGET_WORKING_MEMORY)
        )


def _chars_per_token_calibrate(*, assembly: Assembly, usage: claude.Usage) -> None:
    """Learn how many characters a token is from what the API counted for this context (the
    figure of the model the Heart calls: each local model has its own, ``chars_per_token_key``)."""
    previous = chars_per_token()
    calibrated = chars_per_token_calibrated(
        previous=previous,
        characters=len(assembly.system_text) + len(assembly.user_text),
        tokens=usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens,
    )
    if calibrated != previous:
        state_set(chars_per_token_key(), calibrated)


def _reply_stream(
    *,
    turn: Turn,
    attempt: int,
    assembly: Assembly,
    identities: list[str],
    stop: WorkerStop | None,
) -> claude.Reply:
    """Claude's reply, its display text saved as it grows; each save is the turn's heartbeat.

    While the call goes on without new text (waiting out a rate limit between attempts, the
    stream's opening events and pings), the heartbeat alone is written, every
    ``HEARTBEAT_INTERVAL`` seconds: recovery must not take a silent call for a dead worker and
    pay for the reply a second time. A save that meets a locked database is skipped; the next
    one carries the text and the heartbeat.
    """
    event = turn.event
    last_save = last_beat = 0.0
    first_token_saved = turn.first_token_at is not None  # a retry keeps the first attempt's

    def save(**changes) -> bool:
        """Whether the save was made; ``TurnTakenOver`` if this attempt lost the turn."""
        nonlocal last_beat
        try:
            held = _turn_update(turn.pk, attempt=attempt, heartbeat_at=timezone.now(), **changes)
        except OperationalError as error:
            if not lock_error(error):
                raise
            logger.warning("The database is locked (%s); this save of the reply waits", error)
            return False
        if not held:
            raise TurnTakenOver
        last_beat = time.monotonic()
        return True

    def on_text(text_so_far: str) -> None:
        nonlocal last_save, first_token_saved
        if time.monotonic() - last_save < PARTIAL_SAVE_INTERVAL:
            return
        last_save = time.monotonic()
        shown = parse(text_so_far, identities=identities, partial=True).display_text
        changes = {"partial_text": shown, "retrying": ""}
        if not first_token_saved:
            changes["first_token_at"] = timezone.now()
        if save(**changes) and not first_token_saved:
            first_token_saved = True

    def alive() -> None:
        if time.monotonic() - last_beat >= HEARTBEAT_INTERVAL:
            save()

    def on_retry(said: str) -> None:
        save(retrying=said[: Turn._meta.get_field("retrying").max_length])

    content = list(assembly.user)
    if event is not None and event.image:
        with event.image.open("rb") as image_file:
            data = image_file.read()
        media_type = mimetypes.guess_type(event.image.name)[0] or "image/jpeg"
        content.insert(len(content) - 1, claude.image_block(data=data, media_type=media_type))
    messages = [{"role": "user", "content": content}]
    with stop.streaming() if stop is not None else nullcontext():
        return claude.complete(
            component="heart" if event is not None else "nudge",
            system=assembly.system,
            messages=messages,
            offline_answer=partial(offline.reply, system=assembly.system, messages=messages),
            on_text=on_text,
            alive=alive,
            on_retry=on_retry,
        )


def _reply_record(
    *, turn: Turn, attempt: int, text: str, ts: datetime, who: Identities, usage: claude.Reply
) -> tuple[Event, ParsedMessage]:
    """Log the reply and link it to the turn in one transaction, with what the API reported.

    Only while this attempt holds the turn: otherwise nothing is written (``TurnTakenOver``).
    """
    parsed = parse(text, identities=who.names)
    with transaction.atomic(using="events"):
        reply_event, _ = event_record(
            text=text,
            actor=parsed.identity or who.default_companion,
            ts=ts,
            parsed=parsed,
        )
        linked = _turn_update(
            turn.pk,
            attempt=attempt,
            reply_event=reply_event.pk,
            heartbeat_at=timezone.now(),
            model=usage.model,
            input_tokens=usage.usage.input_tokens,
            output_tokens=usage.usage.output_tokens,
            cache_read_tokens=usage.usage.cache_read_tokens,
            cache_write_tokens=usage.usage.cache_write_tokens,
        )
        if not linked:
            raise TurnTakenOver  # the event goes with the transaction
    return reply_event, parsed


def _turn_fail(turn_id: int, attempt: int, reason: str) -> None:
    _when_unlocked(
        partial(
            _turn_update,
            turn_id,
            attempt=attempt,
            status=TurnStatus.ERROR,
            error=reason,
            finished_at=timezone.now(),
        )
    )


def _turn_requeue(turn_id: int, *, attempt: int) -> None:
    """Back in the queue, the text streamed so far cleared; the next attempt streams afresh."""
    _turn_update(
        turn_id, attempt=attempt, status=TurnStatus.QUEUED, partial_text="", heartbeat_at=None
    )
    logger.info("Turn %s went back to the queue: the worker is stopping", turn_id)


def _turn_update(turn_id: int, *, attempt: int | None = None, **changes) -> bool:
    """``Turn.objects.filter(pk=turn_id).update(**changes)`` (a foreign key by its id) in
    plain SQL: a turn writes its row several times, and the ORM takes longer to build each of
    these statements than the database takes to run it.

    With ``attempt``, only while that attempt holds the turn (it is running, and no later
    attempt claimed it since). Whether the row changed.
    """
    connection = connections[router.db_for_write(Turn)]
    fields = [Turn._meta.get_field(name) for name in changes]
    assignments = ", ".join(f"{connection.ops.quote_name(field.column)} = %s" for field in fields)
    values = [
        field.get_db_prep_save(value, connection)
        for field, value in zip(fields, changes.values(), strict=True)
    ]
    condition, condition_values = "id = %s", [turn_id]
    if attempt is not None:
        condition += " AND attempts = %s AND status = %s"
        condition_values += [attempt, TurnStatus.RUNNING]
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {Turn._meta.db_table} SET {assignments} WHERE {condition}",
            [*values, *condition_values],
        )
        return cursor.rowcount > 0


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
    """Requeue turns left ``running`` by a worker that went silent; give up after the attempt
    limit. Return the turns that wait for a worker: those requeued, and, when no turn is
    running, those queued for longer than ``stale_after`` (their task went with a worker).

    A running turn's sign of life is its claim, then each save of the streamed text
    (``heartbeat_at``); silent for ``stale_after``, its worker is taken to be gone. Should it
    still be alive, its attempt can write nothing more once the turn is claimed again.
    """
    cutoff = timezone.now() - stale_after
    silent = Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True, started_at__lt=cutoff)
    running = Turn.objects.filter(status=TurnStatus.RUNNING)
    requeued = []
    for turn in running.filter(silent):
        still_silent = running.filter(silent, pk=turn.pk, attempts=turn.attempts)
        if turn.attempts >= settings.Q_CLUSTER["max_attempts"]:
            still_silent.update(
                status=TurnStatus.ERROR,
                error=f"The worker stopped while answering, {turn.attempts} times; retry by hand.",
                finished_at=timezone.now(),
            )
        elif still_silent.update(status=TurnStatus.QUEUED, heartbeat_at=None):
            requeued.append(turn.pk)
    if requeued or running.exists():
        return requeued
    waiting = Turn.objects.filter(status=TurnStatus.QUEUED, queued_at__lt=cutoff)
    return list(waiting.values_list("pk", flat=True))


def snapshots_prune(*, older_than: datetime) -> int:
    """Delete context snapshots taken before ``older_than``; return how many went."""
    deleted, _ = ContextSnapshot.objects.filter(ts__lt=older_than).delete()
    return deleted
