"""Reading the event log as turns for the Mirror (events store; identities from default), as
its corrections leave it (``events.selectors.as_corrected``: a retracted event left out).

Two queries, never a join across stores: the identities say who is the companion, the events
are read as plain rows and parsed into display lines with the chat page's rules
(``events.render``), so the Mirror reads what the person saw, with the words of two tags (or of
a tag and the text it touches) kept apart.
"""

from events.models import Event, Turn, TurnStatus
from events.render import COMPANION, message_display
from events.selectors import as_corrected
from mirror.route import Line, TurnEvent, turns_of
from mirror.route import Turn as MirrorTurn

EVENT_FIELDS = ("pk", "ts", "actor", "content")
CONTEXT_EVENTS_PER_TURN = 8  # events read back per context turn wanted (replies, secrets…)
PAGE_EVENTS_PER_TURN = 3  # events read per turn wanted, a page at a time


def turn_events(rows, *, sides: dict[str, str]) -> list[TurnEvent]:
    """``(id, ts, actor, content)`` rows, oldest first, as events with their display lines."""
    events = []
    for event_id, ts, actor, content in rows:
        message = message_display(event_id=event_id, content=content, actor=actor, sides=sides)
        companion = message.side == COMPANION
        lines = tuple(
            Line(event_id, actor, segment.kind, segment.text_apart, companion)
            for segment in message.segments
        )
        events.append(TurnEvent(event_id, ts, actor, companion, lines))
    return events


def open_from() -> int | None:
    """The first event of a turn still being answered: it and what follows are not final yet."""
    return (
        Turn.objects.filter(status__in=[TurnStatus.QUEUED, TurnStatus.RUNNING], event__isnull=False)
        .order_by("event_id")
        .values_list("event_id", flat=True)
        .first()
    )


def turns_after(
    event_id: int, *, sides: dict[str, str], limit: int | None = None
) -> list[MirrorTurn]:
    """The settled turns after ``event_id`` (none of a turn still being answered); with
    ``limit``, only the first ``limit`` of them, reading no more of the log than that needs."""
    events = Event.objects.filter(pk__gt=event_id)
    if (first_open := open_from()) is not None:
        events = events.filter(pk__lt=first_open)
    events = events.order_by("pk").values_list(*EVENT_FIELDS)
    if limit is None:
        return turns_of(turn_events(as_corrected(list(events)), sides=sides))
    rows: list = []
    page = max(limit, 1) * PAGE_EVENTS_PER_TURN
    read_to = None  # the last event read, kept or retracted
    while True:
        batch = list((events.filter(pk__gt=read_to) if read_to else events)[:page])
        if batch:
            read_to = batch[-1][0]
        rows += as_corrected(batch)
        turns = turns_of(turn_events(rows, sides=sides))
        # One turn more than asked proves the last asked-for turn is whole.
        if len(batch) < page or len(turns) > limit:
            return turns[:limit]


def events_between(first: int, last: int, *, sides: dict[str, str]) -> list[TurnEvent]:
    """The events ``first``…``last``, both included, oldest first, with their display lines."""
    rows = (
        Event.objects.filter(pk__gte=first, pk__lte=last).order_by("pk").values_list(*EVENT_FIELDS)
    )
    return turn_events(as_corrected(list(rows)), sides=sides)


def turns_between(first: int, last: int, *, sides: dict[str, str]) -> list[MirrorTurn]:
    """The turns made of the events ``first``…``last``, both included."""
    return turns_of(events_between(first, last, sides=sides))


def turns_before(event_id: int, *, count: int, sides: dict[str, str]) -> list[MirrorTurn]:
    """The ``count`` whole turns just before ``event_id``, oldest first (the read-only context)."""
    if count <= 0:
        return []
    rows = list(
        Event.objects.filter(pk__lt=event_id)
        .order_by("-pk")
        .values_list(*EVENT_FIELDS)[: count * CONTEXT_EVENTS_PER_TURN]
    )
    events = turn_events(as_corrected(rows[::-1]), sides=sides)
    if len(rows) == count * CONTEXT_EVENTS_PER_TURN:
        while events and events[0].companion:  # the end of a turn cut off by the page
            events.pop(0)
    return turns_of(events)[-count:]
