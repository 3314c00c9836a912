"""django-q2 entry points of the transfer app: they take ids and call one service each."""

from datetime import timedelta

from django.conf import settings

from transfer.bridges import import_queued_run, imports_recover


def import_task(run_id: int) -> int | None:
    """Run a queued or waiting import from another companion (safe to run twice: only a queued
    or waiting one is claimed)."""
    run = import_queued_run(run_id=run_id)
    return run.pk if run is not None else None


def recover_imports_task() -> list[int]:
    """Mark stopped part-way the imports whose worker went silent, and give a waiting import a
    worker when none runs (a schedule runs this every minute); return the runs stopped."""
    return imports_recover(stale_after=timedelta(seconds=settings.IMPORT_STALE_SECONDS))
