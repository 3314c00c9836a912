"""django-q2 entry points of the Lens."""

from lens import semantic


def vectors_fill_task() -> int:
    """Write the vectors of the newest events that have none (queued after each turn while
    the semantic search is on)."""
    return semantic.vectors_fill(newest=semantic.FILL_AFTER_TURNS)


def vectors_fill_range_task(first: int, last: int) -> int:
    """Write the vectors the events ``first``…``last`` lack (queued after a correction while
    the semantic search is on: ``lens.reindex``)."""
    return semantic.vectors_fill(event_ids=(first, last))
