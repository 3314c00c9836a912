"""django-q2 entry points of the Gem."""

from django.utils import timezone

from gem.services import working_memory_sweep
from gem.state import turn_counter_current


def sweep_decay_task() -> int:
    """Mark working memory that has faded for good as decayed (scheduled hourly)."""
    return len(working_memory_sweep(now=timezone.now(), current_turn=turn_counter_current()))
