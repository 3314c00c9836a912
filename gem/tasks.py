"""django-q2 entry points of the Gem."""

from django.utils import timezone

from gem.archive import archive_run
from gem.services import working_memory_sweep
from gem.state import turn_counter_current


def sweep_decay_task() -> int:
    """Mark working memory that has faded for good as decayed (scheduled hourly)."""
    return len(working_memory_sweep(now=timezone.now(), current_turn=turn_counter_current()))


def archive_working_memory_task() -> int:
    """Move old working memory that is no longer active to the archive (scheduled daily)."""
    return len(archive_run(now=timezone.now()).archived)
