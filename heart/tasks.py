"""django-q2 entry points of the Heart: they take ids and call one service each."""

from datetime import timedelta

from django.conf import settings
from django.utils import timezone
from django_q.tasks import async_task

from heart.services import snapshots_prune, turn_claim_next, turn_run, turns_recover


def run_turns_task(turn_id: int | None = None) -> list[int]:
    """Answer queued turns, oldest first, one at a time, until none is left.

    ``turn_id`` only names the turn that caused the task; whichever turn is oldest goes
    first. If another worker is already running a turn, this returns and that worker's
    loop picks the rest up.
    """
    answered = []
    while (turn := turn_claim_next()) is not None:
        answered.append(turn_run(turn=turn).pk)
    if answered:
        vectors_fill_queue()
    return answered


def vectors_fill_queue() -> None:
    """After turns are answered (by the worker, or from the terminal by ``manage.py turn``),
    queue the vectors of the newest events while the semantic search is on, so the new turns
    are found by meaning at the next message."""
    if settings.SEARCH_SEMANTIC:
        async_task("lens.tasks.vectors_fill_task", group="search")


def recover_turns_task() -> list[int]:
    """Requeue turns a dead worker left running (a schedule runs this every minute)."""
    stale_after = timedelta(seconds=settings.Q_CLUSTER["timeout"] + 60)
    requeued = turns_recover(stale_after=stale_after)
    if requeued:
        async_task("heart.tasks.run_turns_task", requeued[0], group="turns")
    return requeued


def prune_snapshots_task() -> int:
    """Delete context snapshots older than the retention setting."""
    return snapshots_prune(
        older_than=timezone.now() - timedelta(days=settings.SNAPSHOT_RETENTION_DAYS)
    )
