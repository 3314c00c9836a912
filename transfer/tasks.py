"""django-q2 entry points of the transfer app: they take ids and call one service each."""

from transfer.bridges import import_queued_run


def import_task(run_id: int) -> int | None:
    """Run a queued import from another companion (safe to run twice: only a queued one is
    claimed)."""
    run = import_queued_run(run_id=run_id)
    return run.pk if run is not None else None
