"""The worker's state in words, for the chat: its dot and the words beside it, and why a
reply still waits (the worker stopped, messages ahead of it, Claude answering)."""

import logging
from dataclasses import dataclass

from django.conf import settings
from django_q.status import Stat

from events.models import Turn, TurnStatus
from silentstar.disks import data_folder_trouble, disk_said
from silentstar.words import counted

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class WorkerState:
    state: str  # online, busy or offline: the dot's colour
    said: str  # the whole sentence
    short: str  # the words beside the dot; "" when all is well


def worker_state() -> WorkerState:
    """Whether a worker runs (django-q2's record of its clusters), and whether it answers."""
    if not settings.Q_CLUSTER.get("sync") and not _cluster_stats():
        # The worker records that it runs in the data folder (with the database broker): a full
        # disk keeps it from saying so, and keeps it from answering.
        if (trouble := data_folder_trouble()) is not None:
            said = disk_said(
                trouble, stopped="The worker cannot go on", again="it carries on by itself"
            )
            return WorkerState("offline", said, "disk full")
        return WorkerState(
            "offline",
            "The worker is not running: messages wait until it starts (manage.py qcluster)",
            "worker stopped",
        )
    if Turn.objects.filter(status=TurnStatus.RUNNING).exists():
        return WorkerState("busy", "The worker is answering a message", "")
    return WorkerState("online", "The worker is ready", "")


def turn_waiting(turn: Turn, worker: WorkerState) -> str:
    """Why a reply still waits, in words a person reads without hovering ("" while the answer
    comes: its text shows it)."""
    if turn.status == TurnStatus.RUNNING:
        if turn.partial_text:
            return ""
        if turn.retrying:
            return turn.retrying
        if turn.attempts > 1:
            return f"Claude is answering again (attempt {turn.attempts}): the first try stopped."
        return "Claude is reading what she knows and answering…"
    if worker.state == "offline":
        return f"Waiting: {worker.said[0].lower()}{worker.said[1:]}. Your message is kept."
    ahead = Turn.objects.filter(
        status__in=(TurnStatus.QUEUED, TurnStatus.RUNNING), pk__lt=turn.pk
    ).count()
    if ahead:
        return f"Waiting: {counted(ahead, 'message')} ahead of this one."
    return "Waiting for the worker to take it…"


def _cluster_stats() -> list:
    """django-q2's own record of the clusters that are running (empty when none is)."""
    try:
        return Stat.get_all()
    except Exception:
        logger.warning("Could not read the task cluster's status", exc_info=True)
        return []
