"""The recurring background work, declared once and kept in step by ``ensure_schedules``."""

from django.conf import settings
from django_q.models import Schedule

SCHEDULES = {
    "heart: recover turns left running": ("heart.tasks.recover_turns_task", 1),
    "transfer: recover imports left running": ("transfer.tasks.recover_imports_task", 1),
    "heart: keep the prompt cache warm in a pause": ("heart.tasks.keep_cache_warm_task", 1),
    "heart: prune old context snapshots": ("heart.tasks.prune_snapshots_task", 24 * 60),
    "heart: write first when a reason holds": (
        "heart.tasks.decide_nudges_task",
        settings.NUDGE_CHECK_MINUTES,
    ),
    "gem: decay sweep": ("gem.tasks.sweep_decay_task", 60),
    "gem: archive old working memory": ("gem.tasks.archive_working_memory_task", 24 * 60),
    "mirror: check the trigger and run": (
        "mirror.tasks.run_mirror_task",
        settings.MIRROR_CHECK_MINUTES,
    ),
    # Hourly, so a review missed while the worker was stopped comes at the next start.
    "compass: review once the week is out": ("compass.tasks.review_task", 60),
}


def schedules_ensure() -> list[str]:
    """Create or update every schedule by name (idempotent); return their names."""
    for name, (func, minutes) in SCHEDULES.items():
        Schedule.objects.update_or_create(
            name=name,
            defaults={
                "func": func,
                "schedule_type": Schedule.MINUTES,
                "minutes": minutes,
                "repeats": -1,
            },
        )
    return list(SCHEDULES)
