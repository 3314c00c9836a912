"""django-q2 entry points of the Mirror."""

import logging
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from mirror.rebuild import stale_rebuilt
from mirror.run import SCHEDULED, mirror_run

logger = logging.getLogger(__name__)


def run_mirror_task() -> int | None:
    """Write again the summaries of corrected events (``stale_rebuilt``), then check the
    trigger and run the Mirror when it fires (scheduled); return the run's id.

    A run stops taking new chunks after half the task timeout, so a long backlog is worked off
    over several checks instead of being cut off by the worker.
    """
    now = timezone.now()
    deadline = now + timedelta(seconds=settings.Q_CLUSTER["timeout"] / 2)
    try:
        stale_rebuilt()
    except Exception:  # withheld until the next check; the scheduled run goes on
        logger.exception("Summaries of corrected events could not be written again")
    run = mirror_run(kind=SCHEDULED, now=now, deadline=deadline)
    return run.pk if run is not None else None
