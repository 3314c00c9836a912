"""Reads of the event log shared with the apps above it."""

from collections.abc import Iterable
from datetime import datetime
from typing import NamedTuple

from events.models import Event


class SourceEvent(NamedTuple):
    """What the Anvil shows of an event something came from."""

    id: int
    ts: datetime
    actor: str
    content: str


def source_events(event_ids: Iterable[int]) -> dict[int, SourceEvent]:
    """The events of the event log among ``event_ids``, by id, read in one query."""
    event_ids = sorted(set(event_ids))
    if not event_ids:
        return {}
    rows = Event.objects.filter(pk__in=event_ids).values_list("pk", "ts", "actor", "content")
    return {row[0]: SourceEvent(*row) for row in rows}
