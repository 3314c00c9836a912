"""When the Mirror fires, how a chunk is routed, and how the log is cut into turns and chunks.

Pure: no ORM, no settings, no clock. The caller reads the events and passes plain data in.

DO density
    The share of a stretch's display text (characters) that is ``do`` or ``narrate``, the
    person's and the companion's alike; 0 when there is no display text.

Trigger (the seed's ``should_fire``, and one rule more)
    Hold while the density of the latest turns is over 0.8 (an intense moment stays at full
    resolution); otherwise fire when a hole is near, at 20 turns since the last run, or at 4
    hours and 5 turns. A hole is near when the Recent window is full and holds no more than
    ``HOLE_MARGIN_TURNS`` turns the summaries already cover (``hole_near``): a few turns more
    and its oldest lines would pass the newest summary's end, in neither Recent nor a summary.
    Long messages shrink Recent below a chunk of 20 turns; this rule fires before that happens.

Route
    Density at most 40 %: two passes (clean → summarise and tag); over 40 %: three (clean →
    compress do/narrate keeping every say → summarise and tag).

Turns and chunks
    A turn opens with each event from the person's side and gathers the companion's events that
    follow it (events before the first such event belong to the first turn). A chunk is a run of
    consecutive turns, ``size`` of them; the last, shorter one is kept only when asked for.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

HOLD_DENSITY = 0.8  # over this, hold: do not interrupt a high-intensity moment
FIRE_TURNS = 20  # fire at this many turns since the last run
FALLBACK_HOURS = 4  # or at this many hours since the last run…
FALLBACK_TURNS = 5  # …with at least this many turns
HOLD_WINDOW_TURNS = 10  # the latest turns whose density decides the hold
HOLE_MARGIN_TURNS = 4  # fire when a full Recent holds no more summarised turns than this
ROUTE_THRESHOLD = 0.4  # DO density over this takes the three-pass route

TWO_PASS, THREE_PASS = "two-pass", "three-pass"
CLEAN, COMPRESS, SUMMARISE, MERGE = "clean", "compress", "summarise", "merge"
PASSES = {TWO_PASS: (CLEAN, SUMMARISE), THREE_PASS: (CLEAN, COMPRESS, SUMMARISE)}
DO_KINDS = frozenset({"do", "narrate"})


UNNAMED = "unknown"  # who a transcript says wrote an event that names no identity


@dataclass(frozen=True, slots=True)
class Line:
    """One display segment of one event."""

    event_id: int
    actor: str
    kind: str  # say | do | narrate
    text: str
    companion: bool


@dataclass(frozen=True, slots=True)
class TurnEvent:
    event_id: int
    ts: datetime
    actor: str
    companion: bool
    lines: tuple[Line, ...]


@dataclass(frozen=True, slots=True)
class Turn:
    events: tuple[TurnEvent, ...]

    @property
    def first_event_id(self) -> int:
        return self.events[0].event_id

    @property
    def last_event_id(self) -> int:
        return self.events[-1].event_id

    @property
    def lines(self) -> tuple[Line, ...]:
        return tuple(line for event in self.events for line in event.lines)


def do_density(lines: Iterable[Line]) -> float:
    """do + narrate characters over all display characters; 0.0 with no display text."""
    total = do = 0
    for line in lines:
        total += len(line.text)
        if line.kind in DO_KINDS:
            do += len(line.text)
    return do / total if total else 0.0


def hole_near(
    *, window_first: int | None, window_full: bool, summarised_turn_starts: Sequence[int]
) -> bool:
    """Whether Recent is about to leave turns in neither Recent nor a summary.

    ``summarised_turn_starts``: the first events of the newest ``HOLE_MARGIN_TURNS + 1`` turns
    the summaries cover, oldest first (fewer when fewer are covered). ``window_first`` None
    means Recent shows nothing.
    """
    if not window_full:
        return False
    if window_first is None or len(summarised_turn_starts) <= HOLE_MARGIN_TURNS:
        return True
    return window_first > summarised_turn_starts[0]


def should_fire(
    turns_since_last: int, hours_since_last: float, do_density: float, *, near: bool = False
) -> bool:
    """The seed's trigger, word for word, and ``near``: a hole is near (``hole_near``)."""
    if do_density > HOLD_DENSITY:
        return False  # Don't interrupt high-intensity moments
    if near and turns_since_last:
        return True  # Before Recent's oldest turns pass the newest summary
    if turns_since_last >= FIRE_TURNS:
        return True  # Turn-based (every ~1-2 hours)
    if hours_since_last >= FALLBACK_HOURS and turns_since_last >= FALLBACK_TURNS:  # noqa: SIM103
        return True  # Time fallback
    return False


def route_for(density: float) -> str:
    return THREE_PASS if density > ROUTE_THRESHOLD else TWO_PASS


def turns_of(events: Sequence[TurnEvent]) -> list[Turn]:
    """Events, oldest first, grouped into turns (see the module docstring)."""
    groups: list[list[TurnEvent]] = []
    for event in events:
        if not groups or (not event.companion and _has_person(groups[-1])):
            groups.append([event])
        else:
            groups[-1].append(event)
    return [Turn(tuple(group)) for group in groups]


def _has_person(group: list[TurnEvent]) -> bool:
    return any(not event.companion for event in group)


def chunks_of(turns: Sequence[Turn], *, size: int, keep_short: bool) -> list[list[Turn]]:
    """Consecutive runs of ``size`` turns; the shorter last one only with ``keep_short``."""
    chunks = [list(turns[start : start + size]) for start in range(0, len(turns), size)]
    if chunks and len(chunks[-1]) < size and not keep_short:
        chunks.pop()
    return chunks
