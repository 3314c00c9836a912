"""django-q2 entry points of the Lens."""

from lens import semantic


def vectors_fill_task() -> int:
    """Write the vectors of the newest events that have none (queued after each turn while
    the semantic search is on)."""
    return semantic.vectors_fill(newest=semantic.FILL_AFTER_TURNS)
