"""``python -m bench queue``: django-q2 pickup, from enqueueing a task to its result stored.

The command starts a cluster (``manage.py qcluster``) on throwaway stores and calls
``queue_pickup_measure`` beside it.
"""

import statistics
import time
from collections.abc import Callable

from django.utils import timezone


def queue_pickup_measure(*, tasks: int, progress: Callable[[str], None]) -> dict:
    """Enqueue trivial tasks one at a time to a running cluster; time enqueue → result stored."""
    from django_q.models import Task
    from django_q.tasks import async_task

    pickups = []
    for n in range(tasks):
        enqueued = timezone.now()
        task_id = async_task("math.floor", 1.5)
        deadline = time.monotonic() + 30
        while (task := Task.objects.filter(id=task_id).first()) is None:
            if time.monotonic() > deadline:
                raise RuntimeError("the cluster did not run the task within 30 s")
            time.sleep(0.002)
        pickups.append((task.stopped - enqueued).total_seconds() * 1000)
        if (n + 1) % 25 == 0:
            progress(f"tasks {n + 1}/{tasks}")
    pickups.sort()
    return {
        "tasks": tasks,
        "p50_ms": statistics.median(pickups),
        "p95_ms": pickups[int(0.95 * (len(pickups) - 1))],
    }
