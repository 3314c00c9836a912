"""Reads of the Mirror's output shared with other apps."""

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
