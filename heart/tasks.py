"""django-q2 entry points of the Heart: they take ids and call one service each."""

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

from django.conf import settings
from django.utils import timezone
from django_q.tasks import async_task

from heart.nudges import nudges_decide
from heart.push import push_send
from heart.services import (
    TurnStopped,
    WorkerStop,
    snapshots_prune,
    turn_claim_next,
    turn_run,
    turns_recover,
)
from heart.warm import cache_keep_warm


def run_turns_task(turn_id: int | None = None) -> list[int]:
    """Answer queued turns, oldest first, one at a time, until none is left.

    ``turn_id`` only names the turn that caused the task; whichever turn is oldest goes
    first. If another worker is already running a turn, this returns and that worker's
    loop picks the rest up.

    SIGTERM (a stopping cluster, scripts/run's Ctrl-C, a service manager) puts a turn whose
    reply is still streaming back in the queue, queues this task again for the next worker,
    and then ends the worker process as SIGTERM would have.
    """
    answered = []
    stop = WorkerStop()
    with _stop_on_sigterm(stop):
        while not stop.requested and (turn := turn_claim_next()) is not None:
            try:
                answered.append(turn_run(turn=turn, stop=stop).pk)
            except TurnStopped:
                break
        if stop.requested:
            async_task("heart.tasks.run_turns_task", group="turns")
        if answered:
            vectors_fill_queue()
    return answered


@contextmanager
def _stop_on_sigterm(stop: WorkerStop) -> Iterator[None]:
    """While the block runs, SIGTERM asks ``stop``; after it, the signal has its usual effect.

    Only in a process's main thread, where a worker runs its tasks (signals reach no other);
    turns answered in a web request's thread (synchronous tasks) are not stopped this way.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: stop.request())
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)
    if stop.requested:
        signal.raise_signal(signal.SIGTERM)


def vectors_fill_queue() -> None:
    """After turns are answered (by the worker, or from the terminal by ``manage.py turn``),
    queue the vectors of the newest events while the semantic search is on, so the new turns
    are found by meaning at the next message."""
    if settings.SEARCH_SEMANTIC:
        async_task("lens.tasks.vectors_fill_task", group="search")


def recover_turns_task() -> list[int]:
    """Requeue turns whose worker went silent, and queue a worker for turns left waiting
    (a schedule runs this every minute)."""
    waiting = turns_recover(stale_after=timedelta(seconds=settings.TURN_STALE_SECONDS))
    if waiting:
        async_task("heart.tasks.run_turns_task", waiting[0], group="turns")
    return waiting


def keep_cache_warm_task() -> bool:
    """Read the last turn's cached context if the conversation pauses (a schedule runs this every
    minute; it does nothing unless ``SILENTSTAR_CACHE_KEEP_WARM`` is on)."""
    return cache_keep_warm()


def decide_nudges_task() -> int | None:
    """Write first when a reason the person turned on holds and the rules let it (a schedule
    runs this every ``SILENTSTAR_NUDGE_CHECK_MINUTES``). The nudge's id, if one was sent."""
    nudge = nudges_decide()
    return nudge.pk if nudge is not None else None


def prune_snapshots_task() -> int:
    """Delete context snapshots older than the retention setting."""
    return snapshots_prune(
        older_than=timezone.now() - timedelta(days=settings.SNAPSHOT_RETENTION_DAYS)
    )


def push_send_task(delivery_id: int) -> str:
    """Send one notification to one device (``heart.push``), unless it was sent already."""
    return push_send(delivery_id=delivery_id)
