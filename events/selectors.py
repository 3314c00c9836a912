"""Reads of the event log shared with the apps above it."""

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import NamedTuple

from django.db.models import Max

from events.corrected import Step, View, corrected
from events.models import Correction, Event


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


def corrections_of(
    event_ids: Iterable[int], *, through: int | None = None
) -> dict[int, list[Step]]:
    """The corrections of each of ``event_ids`` that has any, oldest first, in one query;
    with ``through``, those made until that correction (as the log stood then)."""
    steps: dict[int, list[Step]] = {}
    made = Correction.objects.filter(id__lte=through) if through is not None else Correction.objects
    rows = (
        made.filter(event_id__in=set(event_ids))
        .order_by("id")
        .values_list("event_id", "kind", "text", "actor")
    )
    for event_id, kind, text, actor in rows:
        steps.setdefault(event_id, []).append(Step(kind, text, actor))
    return steps


def views_of(rows: Iterable[tuple[int, str, str]]) -> dict[int, View]:
    """The corrected view of each ``(id, actor, content)`` event, by id."""
    rows = list(rows)
    steps = corrections_of(row[0] for row in rows)
    return {pk: corrected(content, actor, steps.get(pk, ())) for pk, actor, content in rows}


EventRow = tuple[int, datetime, str, str]  # id, ts, actor, content


def corrections_newest() -> int:
    """The newest correction's id (0: none): how far a turn's context read them."""
    return Correction.objects.aggregate(newest=Max("id"))["newest"] or 0


def as_corrected(rows: Sequence[EventRow], *, through: int | None = None) -> list[EventRow]:
    """``(id, ts, actor, content)`` events as their corrections leave them (with ``through``,
    those made until that correction), the retracted left out, in the order given."""
    if through == 0:  # none made by then: nothing to read
        return list(rows)
    steps = corrections_of((row[0] for row in rows), through=through)
    if not steps:
        return list(rows)
    kept = []
    for pk, ts, actor, content in rows:
        view = corrected(content, actor, steps.get(pk, ()))
        if not view.retracted:
            kept.append((pk, ts, view.actor, view.content))
    return kept
