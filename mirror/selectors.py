"""Reads of the Mirror's output shared with other apps."""

from collections.abc import Iterable
from datetime import datetime

from events.models import Correction
from mirror.models import Summary


def summary_markers(*, first_event_id: int, last_event_id: int) -> list[Summary]:
    """The current L0 summaries that end within these events, oldest first: the chat history
    shows each as a collapsed marker after the last event it covers."""
    return list(
        Summary.objects.filter(
            level="L0",
            superseded_by__isnull=True,
            last_event_id__gte=first_event_id,
            last_event_id__lte=last_event_id,
        ).order_by("last_event_id", "id")
    )


def summaries_stale(
    summaries: Iterable[tuple[int, int, int, datetime]], *, through: int | None = None
) -> set[int]:
    """The ids, among ``(id, first event, last event, created at)`` summaries, of those an
    event in their range was corrected after they were written: their text may hold what was
    taken back or changed. They are withheld until the Mirror writes them again
    (``mirror.run.stale_rebuilt``)."""
    summaries = list(summaries)
    if not summaries or through == 0:  # ``through``: the newest correction, 0 for none
        return set()
    first = min(summary[1] for summary in summaries)
    corrected = list(
        Correction.objects.filter(event_id__gte=first).values_list("event_id", "made_at")
    )
    return {
        pk
        for pk, low, high, created_at in summaries
        if any(low <= event_id <= high and made_at > created_at for event_id, made_at in corrected)
    }
