"""django-q2 entry points of the Anvil: they take ids and call one service each."""

from anvil.bridges import preview_html
from transfer.bridges import preview_queued_run


def preview_import_task(run_id: int) -> int | None:
    """Read and plan a file too large to preview in a page request, and keep its preview as the
    import page draws it up (safe to run twice: only an unclaimed one is claimed)."""
    run = preview_queued_run(run_id=run_id, render=preview_html)
    return run.pk if run is not None else None
