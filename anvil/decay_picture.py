"""A working-memory item's decay drawn for its page in the Anvil: its score from its anchor
until now, with the real turn counter of the past, and ahead at the recent pace of turns.

`decay_picture` reads what the picture needs (the turns since the anchor, the turn counter,
the pressure, the owner's time zone); `picture_build` turns that into the geometry of an SVG
that ``admin/gem/workingmemory/_decay.html`` draws, once wide and once for a phone. The
scores are `gem.decay`'s own (`decay.curve`): the picture never computes one of its own.
"""

import math
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.utils.dateformat import format as date_format

from events.models import Turn
from gem import decay
from gem.selectors import decay_pressure_current
from gem.state import turn_counter_current
from gem.zone import owner_time_zone
from silentstar.words import counted

HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
PACE_WINDOW = timedelta(days=7)  # "the recent pace" of turns, for the projection
PACE_SPAN_MIN = DAY  # a handful of turns in one evening is not a pace of hundreds a day
AHEAD_MAX = timedelta(days=180)  # how far ahead the picture looks for the floor
SAMPLES = 240  # points along the curve, enough for a smooth line at either width
DECADES = 3  # the score axis: 1 down to 0.001, log scale
CHAR_WIDTH = 0.6  # an average character's width, in font sizes, to fit labels

PHASE_LABELS = {
    "drop": "drop",
    "floor": "floor",
    "rise": "rise to due",
    "grace": "grace",
    "fall": "fall",
}
STATUS_WORDS = {
    "resolved": "Resolved",
    "dropped": "Dropped",
    "decayed": "Marked decayed",
    "superseded": "Superseded",
}
# A time axis's step: the first that keeps the ticks to the frame's number.
TICK_STEPS = [
    timedelta(minutes=15),
    timedelta(minutes=30),
    HOUR,
    2 * HOUR,
    3 * HOUR,
    6 * HOUR,
    12 * HOUR,
    DAY,
    2 * DAY,
    3 * DAY,
    4 * DAY,
    7 * DAY,
    14 * DAY,
    28 * DAY,
    56 * DAY,
    91 * DAY,
]


@dataclass(frozen=True)
class Frame:
    """One drawing size: the SVG's user units, the plot's margins, the font, the most ticks."""

    name: str
    width: int
    height: int
    left: int
    right: int
    top: int
    bottom: int
    font: int
    ticks: int

    @property
    def plot_width(self) -> int:
        return self.width - self.left - self.right

    @property
    def plot_height(self) -> int:
        return self.height - self.top - self.bottom

    @property
    def plot_bottom(self) -> int:
        return self.top + self.plot_height

    @property
    def plot_right(self) -> int:
        return self.width - self.right

    @property
    def plot_middle(self) -> tuple[float, float]:
        return self.left + self.plot_width / 2, self.top + self.plot_height / 2

    @property
    def tick_end(self) -> int:
        return self.plot_bottom + 4


WIDE = Frame("wide", width=760, height=300, left=58, right=16, top=22, bottom=66, font=12, ticks=7)
NARROW = Frame(
    "narrow", width=360, height=290, left=50, right=10, top=22, bottom=64, font=11, ticks=4
)


@dataclass(frozen=True)
class Tick:
    x: float
    time: str
    turn: str
    anchor: str  # text-anchor: a label at an edge stays inside the picture


@dataclass(frozen=True)
class Level:
    y: float
    label: str


@dataclass(frozen=True)
class Band:
    name: str
    label: str
    x: float
    width: float
    shows_label: bool  # too narrow a band is named in the list below the picture only


@dataclass(frozen=True)
class Marker:
    kind: str  # now, due, left
    label: str
    x: float
    anchor: str


@dataclass(frozen=True)
class Dot:
    x: float
    y: float
    title: str
    ahead: bool


@dataclass(frozen=True)
class Layout:
    """The geometry of one SVG of the picture, in its own user units."""

    frame: Frame
    x_ticks: list[Tick]
    levels: list[Level]
    floor_y: float
    bands: list[Band]
    markers: list[Marker]
    past_path: str
    ahead_path: str
    dots: list[Dot]
    time_title: str

    @property
    def id(self) -> str:
        return f"anvil-decay-{self.frame.name}"


@dataclass(frozen=True)
class PhaseLine:
    """A plan's phase as the list below the picture names it."""

    name: str
    label: str
    when: str


@dataclass(frozen=True)
class DecayPicture:
    title: str
    summary: str  # the headline beside the picture, or the sentence standing for it
    description: str  # the SVG's <desc>: what it shows, for those who cannot see it
    caption: str
    layouts: list[Layout]
    phases: list[PhaseLine]


def decay_picture(item: Any, *, now: datetime) -> DecayPicture:
    """The picture of ``item`` (a `gem.models.WorkingMemory`) at ``now``: its turns since the
    anchor and over the last week read in one query, up to the end of its plot for an item that
    left (the turns of the months since are never asked for)."""
    since = min(item.refreshed_at, now - PACE_WINDOW)
    until = now
    if item.status != "active" and item.resolved_at is not None:
        start = min(item.refreshed_at, item.resolved_at)
        until = min(now, _left_plot_end(start=start, record_end=item.resolved_at))
    turns = Turn.objects.filter(queued_at__gte=since, queued_at__lte=until).order_by("queued_at")
    return picture_build(
        item,
        now=now,
        current_turn=turn_counter_current(),
        history=list(turns.values_list("queued_at", "number")),
        pressure=decay_pressure_current(),
        zone=ZoneInfo(owner_time_zone()),
    )


def picture_build(
    item: Any,
    *,
    now: datetime,
    current_turn: int,
    history: Sequence[tuple[datetime, int]],
    pressure: float,
    zone: ZoneInfo,
) -> DecayPicture:
    """The picture of ``item`` (anything with a working-memory item's fields) given the turns
    queued since its anchor (``(queued_at, number)``, oldest first), the turn counter now, the
    pressure on working memory and the owner's time zone."""
    title = f"Decay of working-memory item #{item.pk}"
    active = item.status == "active"
    if not active and item.resolved_at is None:
        return DecayPicture(
            title,
            f"This item is {item.status}, and when it left working memory is not recorded: "
            "there is no curve to draw.",
            "",
            "",
            [],
            [],
        )
    record_end = now if active else item.resolved_at
    start = min(item.refreshed_at, record_end)
    pace = turn_pace(history, now=now) if active else 0.0
    turn_at = turn_counter(
        history,
        created_turn=item.turn,
        anchor=item.refreshed_at,
        now=now,
        current_turn=current_turn,
        pace=pace,
    )
    timed_plan = item.type == decay.PLAN and item.due is not None
    never = item.type == decay.SECRET or (item.type == decay.PLAN and item.due is None)
    crossing = None
    if active and not never:
        crossing = decay.floor_crossing(
            **_scored(item, pressure),
            start=start,
            end=now + AHEAD_MAX,
            turn_at=turn_at,
        )
    end = _plot_end(
        start=start, record_end=record_end, active=active, never=never, crossing=crossing, now=now
    )
    curve_end = end if active else record_end
    phases = decay.plan_phases(refreshed_at=item.refreshed_at, due=item.due) if timed_plan else []
    specials = [start, record_end, curve_end, *(p.start for p in phases)]
    if crossing is not None:
        specials.append(crossing)
    if timed_plan:
        specials.append(item.due)
    if timed_plan and item.hidden:  # where a hidden plan comes back
        specials.append(item.due - decay.PLAN_RESURFACE_HOURS * HOUR)
    moments = sorted(
        {
            *(start + (curve_end - start) * i / SAMPLES for i in range(SAMPLES + 1)),
            *(m for m in specials if start <= m <= curve_end),
        }
    )
    points = decay.curve(**_scored(item, pressure), moments=[(m, turn_at(m)) for m in moments])
    when = when_format(zone, now)
    at_end = next(p for p in points if p.at == record_end)
    summary = _summary(
        item,
        at_end=at_end,
        active=active,
        never=never,
        crossing=crossing,
        turn_at=turn_at,
        now=now,
        when=when,
        phases=phases,
    )
    layouts = [
        _layout(
            frame,
            item=item,
            pressure=pressure,
            points=points,
            phases=phases,
            start=start,
            end=end,
            now=now,
            active=active,
            turn_at=turn_at,
            zone=zone,
            when=when,
        )
        for frame in (WIDE, NARROW)
    ]
    return DecayPicture(
        title=title,
        summary=summary,
        description=_description(item, active=active, start=start, when=when),
        caption=_caption(item, active=active, never=never, pace=pace, pressure=pressure),
        layouts=layouts,
        phases=[PhaseLine(p.name, PHASE_LABELS[p.name], _phase_when(p, when)) for p in phases],
    )


def turn_pace(history: Sequence[tuple[datetime, int]], *, now: datetime) -> float:
    """Turns an hour over the last `PACE_WINDOW`, from the first turn in it (a day at least)
    to ``now``; 0 when there was none."""
    recent = [queued_at for queued_at, _ in history if now - PACE_WINDOW < queued_at <= now]
    if not recent:
        return 0.0
    return len(recent) / (max(now - recent[0], PACE_SPAN_MIN) / HOUR)


def turn_counter(
    history: Sequence[tuple[datetime, int]],
    *,
    created_turn: int | None,
    anchor: datetime,
    now: datetime,
    current_turn: int,
    pace: float,
) -> Callable[[datetime], int]:
    """The turn counter at any moment since ``anchor``: up to ``now`` that of the last turn
    queued by then (the item's own turn before any), never past the counter now; after
    ``now``, the counter now plus the turns at ``pace`` an hour. It never falls with time."""
    before = [number for queued_at, number in history if queued_at <= anchor]
    base = created_turn if created_turn is not None else (before[-1] if before else 0)
    times, numbers = [], []
    highest = base
    for queued_at, number in history:
        if queued_at > anchor:
            highest = max(highest, number)
            times.append(queued_at)
            numbers.append(highest)

    def at(moment: datetime) -> int:
        if moment > now:
            return current_turn + round(pace * (moment - now) / HOUR)
        index = bisect_right(times, moment)
        return min(numbers[index - 1] if index else base, current_turn)

    return at


def _scored(item: Any, pressure: float) -> dict:
    return {
        "type": item.type,
        "refreshed_at": item.refreshed_at,
        "created_turn": item.turn,
        "due": item.due,
        "pressure": pressure,
        "hidden": item.hidden,
    }


def _plot_end(
    *,
    start: datetime,
    record_end: datetime,
    active: bool,
    never: bool,
    crossing: datetime | None,
    now: datetime,
) -> datetime:
    """Where the time axis ends: when the item left; for an active item, a little past the
    moment it falls under the floor, or `AHEAD_MAX` ahead when it stays above it."""
    past = record_end - start
    if not active:
        return _left_plot_end(start=start, record_end=record_end)
    if never:
        return now + max(past / 4, DAY)
    if crossing is None:
        return now + AHEAD_MAX
    if crossing > now:
        return crossing + max((crossing - start) / 10, HOUR)
    return now + max(past / 4, HOUR)


def _left_plot_end(*, start: datetime, record_end: datetime) -> datetime:
    """Where the time axis of an item that left ends: when it left, an hour on at the least."""
    return max(record_end, start + HOUR)


def when_format(zone: ZoneInfo, now: datetime) -> Callable[[datetime], str]:
    """Moments as the picture writes them, in the owner's time zone: "Tue 3 Mar 14:00", with
    the year when it is not this one."""
    this_year = now.astimezone(zone).year

    def when(moment: datetime) -> str:
        local = moment.astimezone(zone)
        return date_format(local, "D j M H:i" if local.year == this_year else "D j M Y H:i")

    return when


def score_text(score: float) -> str:
    """A score as the Anvil's list shows it, three decimals; one too small for them in words."""
    return f"{score:.3f}" if score >= 0.0005 else "under 0.001"


def span_text(span: timedelta) -> str:
    """ "40 minutes", "5 hours", "3 days": to the nearest of the largest unit that fits."""
    hours = span / HOUR
    if hours < 1.5:
        count, unit = max(1, round(hours * 60)), "minute"
    elif hours < 36:
        count, unit = round(hours), "hour"
    else:
        count, unit = round(hours / 24), "day"
    return counted(count, unit)


def _summary(
    item: Any,
    *,
    at_end: decay.CurvePoint,
    active: bool,
    never: bool,
    crossing: datetime | None,
    turn_at: Callable[[datetime], int],
    now: datetime,
    when: Callable[[datetime], str],
    phases: list[decay.PlanPhase],
) -> str:
    if not active:
        return (
            f"{STATUS_WORDS.get(item.status, item.status.capitalize())} on "
            f"{when(item.resolved_at)} (turn {at_end.turn}), at a score of "
            f"{score_text(at_end.score)}: from then on it is out of the context."
        )
    if item.type == decay.SECRET:
        return "A secret never decays: its score stays at 1 for as long as it is active."
    if never:
        return (
            "A plan without a due date never decays: its score stays at 1 until it is "
            "resolved or dropped."
        )
    said = f"Now {score_text(at_end.score)}"
    phase = next((p for p in reversed(phases) if p.start <= now), None)
    if phase is not None:
        said += f" ({PHASE_LABELS[phase.name]})"
    if item.due is not None and item.due > now:
        said += f"; due {when(item.due)}, in {span_text(item.due - now)}"
    if crossing is None:
        return f"{said}; it stays above 0.01 for at least the next {AHEAD_MAX.days} days."
    if crossing <= now:
        return (
            f"{said}; under 0.01 since {when(crossing)} (turn {turn_at(crossing)}), so it is "
            "left out of the context."
        )
    said += f"; falls under 0.01 in about {span_text(crossing - now)}"
    turns = turn_at(crossing) - turn_at(now)
    if item.type in decay.HALF_LIVES and turns > 0:
        said += f" / {counted(turns, 'turn')}"
    return said + "."


def _description(item: Any, *, active: bool, start: datetime, when) -> str:
    until = "until now and ahead" if active else f"until it left, {when(item.resolved_at)}"
    return (
        f"The decay score of this {item.type} from its anchor, {when(start)}, {until}, on a "
        "log scale from 1 down to 0.001, with the 0.01 floor under which an item is left out "
        "of the context."
    )


def _caption(item: Any, *, active: bool, never: bool, pace: float, pressure: float) -> str:
    said = [
        "Score on a log scale, 1 down to 0.001; under the dotted 0.01 line an item is left "
        "out of the context."
    ]
    if never:
        said.append("The line stays at 1.")
    elif active:
        said.append("Solid: the past, with the real turn counter. Dashed: ahead,")
        if item.type == decay.PLAN:
            said.append("by the clock alone: a plan with a due date does not count turns.")
        elif pace > 0:
            said.append(
                f"assuming turns keep the last 7 days' pace, about {_count(pace * 24)} a day."
            )
        else:
            said.append("with no turns: there were none in the last 7 days.")
    if pressure > 0 and item.type in decay.HALF_LIVES:
        said.append(
            f"Drawn at the pressure on working memory now, {pressure:.2f}, which shortens the "
            "turn half-lives; the pressure of the past is not recorded."
        )
    return " ".join(said)


def _count(value: float) -> str:
    """A pace as said: "2.5", "6", "40"."""
    return f"{value:.1f}".removesuffix(".0") if value < 10 else f"{round(value)}"


def _phase_when(phase: decay.PlanPhase, when: Callable[[datetime], str]) -> str:
    if phase.end is None:
        return f"from {when(phase.start)}"
    return f"{when(phase.start)} to {when(phase.end)}"


def _layout(
    frame: Frame,
    *,
    item: Any,
    pressure: float,
    points: list[decay.CurvePoint],
    phases: list[decay.PlanPhase],
    start: datetime,
    end: datetime,
    now: datetime,
    active: bool,
    turn_at: Callable[[datetime], int],
    zone: ZoneInfo,
    when: Callable[[datetime], str],
) -> Layout:
    span = end - start

    def x(moment: datetime) -> float:
        return round(frame.left + frame.plot_width * ((moment - start) / span), 1)

    def y(score: float) -> float:
        depth = DECADES if score <= 0 else min(max(-math.log10(score), 0.0), DECADES)
        return round(frame.top + frame.plot_height * depth / DECADES, 1)

    def fits(text: str, width: float) -> bool:
        return len(text) * frame.font * CHAR_WIDTH + 6 <= width

    past = [p for p in points if p.at <= now] if active else points
    ahead = [p for p in points if p.at >= now] if active else []
    moments = time_ticks(start, end, zone=zone, most=frame.ticks)
    ticked = decay.curve(**_scored(item, pressure), moments=[(m, turn_at(m)) for m in moments])
    x_ticks = []
    for index, point in enumerate(ticked):
        label = tick_label(point.at, moments, index, zone)
        turn = f"{'≈ ' if active and point.at > now else ''}turn {point.turn}"
        position = x(point.at)
        x_ticks.append(
            Tick(position, label, turn, label_anchor(position, max(label, turn, key=len), frame))
        )

    bands = []
    for phase in phases:
        left = max(phase.start, start)
        right = min(phase.end or end, end)
        if right <= left:
            continue
        width = round(x(right) - x(left), 1)
        label = PHASE_LABELS[phase.name]
        bands.append(Band(phase.name, label, x(left), width, fits(label, width)))

    markers = []
    if active:
        markers.append(Marker("now", "now", x(now), label_anchor(x(now), "now", frame)))
    else:
        markers.append(
            Marker(
                "left",
                "left",
                x(item.resolved_at),
                label_anchor(x(item.resolved_at), "left", frame),
            )
        )
    if item.type == decay.PLAN and item.due is not None and start <= item.due <= end:
        markers.append(Marker("due", "due", x(item.due), "start"))

    dots = [
        Dot(
            x(p.at),
            y(p.score),
            _dot_title(p, when, ahead=active and p.at > now),
            active and p.at > now,
        )
        for p in ticked
        if active or p.at <= item.resolved_at  # no point after an item left
    ]
    if active and now not in moments:
        now_point = next(p for p in points if p.at == now)
        dots.append(
            Dot(x(now), y(now_point.score), _dot_title(now_point, when, ahead=False), False)
        )

    return Layout(
        frame=frame,
        x_ticks=x_ticks,
        levels=[Level(y(10.0**-d), f"{10.0**-d:g}") for d in range(DECADES + 1)],
        floor_y=y(decay.FLOOR_THRESHOLD),
        bands=bands,
        markers=markers,
        past_path=_path(past, x, y),
        ahead_path=_path(ahead, x, y),
        dots=dots,
        time_title=f"time ({zone.key}) and turn counter",
    )


def label_anchor(position: float, text: str, frame: Any) -> str:
    """The text-anchor of a label at ``position`` in ``frame`` (its ``font`` and ``width``):
    centred, or from its start or end where centred it would leave the picture."""
    half = len(text) * frame.font * CHAR_WIDTH / 2
    if position - half < 2:
        return "start"
    if position + half > frame.width - 2:
        return "end"
    return "middle"


def _path(points: list[decay.CurvePoint], x, y) -> str:
    if len(points) < 2:
        return ""
    return "M" + " L".join(f"{x(p.at)},{y(p.score)}" for p in points)


def _dot_title(point: decay.CurvePoint, when, *, ahead: bool) -> str:
    turn = f"turn {point.turn}" + (" (projected)" if ahead else "")
    return f"{when(point.at)}, {turn}: score {score_text(point.score)}"


def time_ticks(start: datetime, end: datetime, *, zone: ZoneInfo, most: int) -> list[datetime]:
    """Round moments of the owner's clock between ``start`` and ``end``, at most ``most`` (a
    step that fits ``most - 1`` times may fit once more): on the hour (or its quarters) for a
    short span, at midnight for a long one."""
    span = end - start
    step = next((s for s in TICK_STEPS if span / s <= most - 1), TICK_STEPS[-1])
    local = start.astimezone(zone)
    moment = local.replace(hour=0, minute=0, second=0, microsecond=0)
    if step >= DAY:
        if moment < local:
            moment += DAY
    else:
        while moment < local:
            moment += step
    ticks = []
    while moment <= end:
        ticks.append(moment)
        moment += step  # on the wall clock: a day is midnight to midnight across a change
    return ticks[:most]


def tick_label(moment: datetime, moments: list[datetime], index: int, zone: ZoneInfo) -> str:
    """A tick's time: "3 Mar" for a whole day; "14:00", with the day on the first tick and
    wherever the day changes, for shorter steps."""
    local = moment.astimezone(zone)
    if local.hour == local.minute == 0 and all(
        m.astimezone(zone).hour == m.astimezone(zone).minute == 0 for m in moments
    ):
        return date_format(local, "j M")
    earlier = moments[index - 1].astimezone(zone) if index else None
    if earlier is None or earlier.date() != local.date():
        return date_format(local, "j M H:i")
    return date_format(local, "H:i")
