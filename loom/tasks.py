"""django-q2 entry point of the Loom: one task per facet agent's call."""

from loom.services import loom_call_claim, loom_call_run


def run_loom_call_task(call_id: int) -> int | None:
    """Make a queued call; safe to run twice (a call not queued any more is left alone)."""
    if not loom_call_claim(call_id=call_id):
        return None
    return loom_call_run(call_id=call_id).pk
