"""Working-memory decay: scores and curves.

Pure: standard library only, no Django and no project imports, so it can be
unit- and property-tested without a database. Every function takes
keyword-only arguments and timezone-aware datetimes.

Ordinary types decay exponentially in wall-clock hours and in conversation
turns, the two combined multiplicatively::

    score = 0.5 ** (hours / time_half_life) * 0.5 ** (turns / turn_half_life)

Secrets never decay (1.0). Untimed plans stay at 1.0. Timed plans follow the
submersion curve (`plan_curve`), anchored on ``refreshed_at`` and ``due``.
Items scoring under `FLOOR_THRESHOLD` are left out of context.

Pressure (seed 004, "shut up, let me think"): when working memory is full, the
conversation wears it away faster. The fill ratio of the last turn (the share
of the Lingering budget its items took) times a strength (a setting; 0 turns
it off) is the pressure (`pressure_from_fill`), and it shortens the turn
half-lives, the conversation's clock, by ``1 / (1 + pressure)``. The hours
are untouched: a quiet day wears memory as it always does.
"""

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final


@dataclass(frozen=True, slots=True)
class HalfLife:
    """How long until an item's score halves: in hours, and in turns."""

    hours: float
    turns: float


# The SPEC's table. Secrets and plans are not here: they do not decay exponentially.
HALF_LIVES: Final[dict[str, HalfLife]] = {
    "feeling": HalfLife(hours=2, turns=3),
    "thought": HalfLife(hours=12, turns=8),
    "pattern": HalfLife(hours=168, turns=60),
    "desc": HalfLife(hours=72, turns=40),
    "pin": HalfLife(hours=336, turns=100),
}
SECRET: Final = "secret"  # never decays: always 1.0
PLAN: Final = "plan"  # untimed: 1.0; timed: the submersion curve
TYPES: Final[frozenset[str]] = frozenset({*HALF_LIVES, SECRET, PLAN})

FLOOR_THRESHOLD: Final = 0.01  # items scoring under this are left out of context
PLAN_FLOOR: Final = 0.08  # a submerged plan: barely visible, never gone

# Plan submersion curve, in hours.
PLAN_SPIKE_HOURS: Final = 4.0  # phase 1: 1.0 at the refresh down to the floor
PLAN_RESURFACE_HOURS: Final = 48.0  # phase 3: the rise from the floor to 1.0 before due
PLAN_GRACE_HOURS: Final = 24.0  # phase 4: 1.0 down to PLAN_GRACE_END after due
PLAN_GRACE_END: Final = 0.5
PLAN_OVERDUE_HALF_LIFE_HOURS: Final = 24.0  # phase 5: halves every day after the grace

_HOUR: Final = timedelta(hours=1)
_SECOND: Final = timedelta(seconds=1)
_MICROSECOND: Final = timedelta(microseconds=1)


def score(
    *,
    type: str,
    refreshed_at: datetime,
    now: datetime,
    created_turn: int | None,
    current_turn: int,
    due: datetime | None = None,
    pressure: float = 0.0,
    hidden: bool = False,
) -> float:
    """The decay score, in [0, 1], of a working-memory item at ``now``/``current_turn``.

    A ``hidden`` plan with a due date scores 0 until its resurfacing window
    (`hidden_plan_surfaces`), and its curve from then on.

    ``pressure`` (`pressure_from_fill`) shortens the turn half-lives of the
    exponential types by ``1 / (1 + pressure)``: 0 has no effect, 1 halves
    them. It does not touch their hours, nor secrets or plans, which have no
    half-lives.
    Turns are ignored for plans, whose curve is anchored on the clock.

    Elapsed time and turns are clamped at 0 (clock skew, a ``now`` before
    ``refreshed_at``; a ``created_turn`` of None counts as no turns elapsed).
    An unknown type, a naive datetime or a negative or non-finite pressure is
    a programming error and raises ValueError.
    """
    _check_type(type)
    _check_aware(refreshed_at=refreshed_at, now=now, due=due)
    return scores(
        [(type, refreshed_at, created_turn, due, hidden)],
        now=now,
        current_turn=current_turn,
        pressure=pressure,
    )[0]


def scores(
    items: Iterable[tuple[str, datetime, int | None, datetime | None, bool]],
    *,
    now: datetime,
    current_turn: int,
    pressure: float = 0.0,
) -> list[float]:
    """`score` of many items at one moment, in order: ``(type, refreshed_at, created_turn,
    due, hidden)`` each. The same numbers as `score`, bit for bit; the moment and the pressure are
    checked once, each item's type and datetimes as it is scored (the context of every turn
    scores all active working memory)."""
    _check_aware(now=now)
    _check_pressure(pressure)
    shrink = 1.0 + pressure
    result = []
    append = result.append  # the loop runs for every active item, every turn
    half_lives = {type: (life.hours, life.turns) for type, life in HALF_LIVES.items()}
    for type, refreshed_at, created_turn, due, hidden in items:
        half_life = half_lives.get(type)
        if half_life is None:
            _check_type(type)
            _check_aware(refreshed_at=refreshed_at, due=due)
            if type == SECRET or due is None:  # a secret, or an untimed plan
                append(1.0)
            elif hidden and not hidden_plan_surfaces(due=due, now=now):
                append(0.0)
            else:
                append(plan_curve(refreshed_at=refreshed_at, now=now, due=due))
            continue
        try:
            hours = (now - refreshed_at) / _HOUR
        except TypeError:  # naive minus aware: say which argument, as `score` does
            _check_aware(refreshed_at=refreshed_at)
            raise
        if hours < 0.0:
            hours = 0.0
        if due is not None and due.utcoffset() is None:
            _check_aware(due=due)
        turns = current_turn - created_turn if created_turn is not None else 0
        if turns < 0:
            turns = 0
        in_hours, in_turns = half_life
        append(0.5 ** (hours / in_hours) * 0.5 ** (turns * shrink / in_turns))
    return result


def pressure_from_fill(*, fill: float, strength: float) -> float:
    """The pressure on working memory: ``strength`` times the fill ratio of the Lingering
    budget (clamped to [0, 1]; a ratio that is not a number counts as empty)."""
    _check_pressure(strength)
    if not math.isfinite(fill):
        fill = 0.0
    return strength * min(max(fill, 0.0), 1.0)


def plan_curve(*, refreshed_at: datetime, now: datetime, due: datetime) -> float:
    """The submersion curve of a timed plan at ``now``, in [0, 1].

    With ``t`` hours since the refresh and ``d`` hours until due (negative once past):

    1. Creation spike, 0 <= t <= 4: ``PLAN_FLOOR ** (t / 4)`` -- exponential
       from 1.0 at the refresh, exactly the floor 0.08 at 4 h (a half-life of
       4·ln 2 / ln 12.5 ≈ 1.1 h).
    2. Submerged: 0.08 from 4 h after the refresh until 48 h before due.
    3. Resurfacing, 0 <= d <= 48: cosine ease from the floor to 1.0,
       ``0.08 + 0.92 * (1 + cos(pi * d / 48)) / 2`` -- flat at both ends.
    4. Grace, 0 <= a <= 24 with ``a = -d`` hours past due: cosine ease 1.0 -> 0.5,
       ``0.75 + 0.25 * cos(pi * a / 24)`` -- flat at due, so the top joins
       phase 3 smoothly and the first hours past due stay near 1.0.
    5. Overdue, a > 24: ``0.5 * 0.5 ** ((a - 24) / 24)``, halving every
       `PLAN_OVERDUE_HALF_LIFE_HOURS`; it falls under `FLOOR_THRESHOLD` about
       5.6 days after the grace ends.

    Every phase boundary is continuous. When phases overlap (due sooner than
    4 h + 48 h after the refresh) the score is the larger of the spike and the
    due curve, so a plan made 10 hours before due is never buried. A plan
    refreshed at or after its due (created overdue) gets no spike: phases 4 and
    5 apply, counted from due. A ``now`` before the refresh counts as the refresh.
    """
    _check_aware(refreshed_at=refreshed_at, now=now, due=due)
    now = max(now, refreshed_at)
    toward_due = _due_curve(hours_to_due=(due - now) / _HOUR)
    if refreshed_at >= due:
        return toward_due
    return max(_spike(hours=_hours_between(refreshed_at, now)), toward_due)


def is_surfacing(score: float) -> bool:
    """Whether an item with this score makes it into context."""
    return score >= FLOOR_THRESHOLD


def hidden_plan_surfaces(*, due: datetime, now: datetime) -> bool:
    """Whether a hidden plan due at ``due`` is in its resurfacing window at ``now``: from
    `PLAN_RESURFACE_HOURS` before due on. Until then it scores 0, so it is left out of context
    (the seed's hidden plans, which stand in for secrets); from then on its curve applies."""
    _check_aware(due=due, now=now)
    return now >= due - PLAN_RESURFACE_HOURS * _HOUR


def is_gone_for_good(
    *,
    type: str,
    refreshed_at: datetime,
    now: datetime,
    created_turn: int | None,
    current_turn: int,
    due: datetime | None = None,
    pressure: float = 0.0,
) -> bool:
    """Whether the sweep may mark the item ``decayed``: under the threshold, never to return.

    Never for secrets (always 1.0), untimed plans (always 1.0) or plans whose
    due is still ahead (they resurface). For every exponential type the score
    is monotone non-increasing in time and in turns (both only move forward,
    and each factor ``0.5 ** (x / hl)`` only falls as ``x`` grows), so once
    under the threshold it stays under. Likewise a plan past due: the spike
    and phases 4-5 only fall. A retag refreshes ``refreshed_at`` -- a new
    anchor, not the item coming back on its own.

    The decision is taken at pressure 0 whatever ``pressure`` is passed (it is
    validated and accepted for symmetry with `score`): pressure is the
    working-memory fill and can fall again, and a score at pressure 0 is the
    highest the item could have at any pressure. Only when even that is under
    the threshold is the item gone for good.
    """
    _check_type(type)
    _check_aware(refreshed_at=refreshed_at, now=now, due=due)
    _check_pressure(pressure)
    if type == SECRET:
        return False
    if type == PLAN and (due is None or due > now):
        return False
    best = score(
        type=type,
        refreshed_at=refreshed_at,
        now=now,
        created_turn=created_turn,
        current_turn=current_turn,
        due=due,
    )
    return not is_surfacing(best)


@dataclass(frozen=True, slots=True)
class CurvePoint:
    """One moment of an item's decay curve: when, the turn counter then and the score."""

    at: datetime
    turn: int
    score: float


def curve(
    *,
    type: str,
    refreshed_at: datetime,
    created_turn: int | None,
    moments: Iterable[tuple[datetime, int]],
    due: datetime | None = None,
    pressure: float = 0.0,
    hidden: bool = False,
) -> list[CurvePoint]:
    """The item's score at each of ``moments`` (``(when, turn counter then)`` pairs), in
    order: `score` itself at each, so a picture of the curve shows the numbers the context
    uses."""
    points = []
    for at, turn in moments:
        value = score(
            type=type,
            refreshed_at=refreshed_at,
            now=at,
            created_turn=created_turn,
            current_turn=turn,
            due=due,
            pressure=pressure,
            hidden=hidden,
        )
        points.append(CurvePoint(at, turn, value))
    return points


# The phases of a timed plan's submersion curve, in the order they come (`plan_phases`).
PLAN_PHASES: Final = ("drop", "floor", "rise", "grace", "fall")


@dataclass(frozen=True, slots=True)
class PlanPhase:
    """A stretch of a timed plan's curve: ``name`` one of `PLAN_PHASES`, from ``start`` to
    ``end`` (None: the fall, which has no end)."""

    name: str
    start: datetime
    end: datetime | None


def plan_phases(*, refreshed_at: datetime, due: datetime) -> list[PlanPhase]:
    """The phases of `plan_curve` from the refresh on, in order, each starting where the one
    before ends: the drop from 1.0 to the floor, the floor, the rise to due, the grace and the
    fall. A phase the curve skips is left out: the floor when due is less than 4 h + 48 h
    after the refresh (the drop then ends where the rise overtakes it, to the microsecond),
    the drop, floor and rise of a plan refreshed at or after its due, and the grace too once
    it is over by the refresh."""
    _check_aware(refreshed_at=refreshed_at, due=due)
    grace_end = due + PLAN_GRACE_HOURS * _HOUR
    edges: list[tuple[str, datetime]] = []
    if refreshed_at < due:
        spike_end = refreshed_at + PLAN_SPIKE_HOURS * _HOUR
        rise_start = due - PLAN_RESURFACE_HOURS * _HOUR
        edges.append(("drop", refreshed_at))
        if spike_end < rise_start:
            edges.append(("floor", spike_end))
        if spike_end <= rise_start:
            edges.append(("rise", rise_start))
        else:
            edges.append(("rise", _rise_overtakes(refreshed_at, due)))
        edges.append(("grace", due))
    elif refreshed_at < grace_end:
        edges.append(("grace", refreshed_at))
    edges.append(("fall", max(grace_end, refreshed_at)))
    ends = [start for _, start in edges[1:]] + [None]
    # A phase of no length (a plan due a microsecond after its refresh has no room for a rise)
    # is one the curve skips.
    return [
        PlanPhase(name, start, end)
        for (name, start), end in zip(edges, ends, strict=True)
        if end is None or start < end
    ]


def floor_crossing(
    *,
    type: str,
    refreshed_at: datetime,
    created_turn: int | None,
    start: datetime,
    end: datetime,
    turn_at: Callable[[datetime], int],
    due: datetime | None = None,
    pressure: float = 0.0,
    hidden: bool = False,
) -> datetime | None:
    """The first moment from ``start`` to ``end`` at which the item scores under
    `FLOOR_THRESHOLD`, to the second, the turn counter at each moment being ``turn_at(moment)``
    (which must never fall as time goes on); None when it stays at or above it throughout.

    The search halves the interval, which is sound because the score never rises again once
    it can fall under the threshold: an exponential type only falls as hours and turns pass
    (`is_gone_for_good`), and a timed plan stays at or above the plan floor until its due,
    then only falls (a hidden plan's window has opened by then). Secrets and untimed plans
    never cross.
    """
    _check_type(type)
    _check_aware(refreshed_at=refreshed_at, start=start, end=end, due=due)
    if type == SECRET or (type == PLAN and due is None):
        return None
    if type == PLAN:
        start = max(start, due)

    def under(moment: datetime) -> bool:
        value = score(
            type=type,
            refreshed_at=refreshed_at,
            now=moment,
            created_turn=created_turn,
            current_turn=turn_at(moment),
            due=due,
            pressure=pressure,
            hidden=hidden,
        )
        return not is_surfacing(value)

    if start > end or not under(end):
        return None
    if under(start):
        return start
    return _first_moment(start, end, under, resolution=_SECOND)  # above at start, under at end


def _rise_overtakes(refreshed_at: datetime, due: datetime) -> datetime:
    """Where the rise to due overtakes the drop when the two overlap: the first microsecond at
    which `_due_curve` is above `_spike` (the spike only falls, the rise only climbs)."""

    def rise_ahead(moment: datetime) -> bool:
        hours = _hours_between(refreshed_at, moment)
        return _due_curve(hours_to_due=(due - moment) / _HOUR) > _spike(hours=hours)

    end = min(due, refreshed_at + PLAN_SPIKE_HOURS * _HOUR)
    return _first_moment(refreshed_at, end, rise_ahead, resolution=_MICROSECOND)


def _first_moment(
    low: datetime, high: datetime, holds: Callable[[datetime], bool], *, resolution: timedelta
) -> datetime:
    """The first moment after ``low`` at which ``holds`` is true, to within ``resolution``, by
    halving: it is false at ``low``, true at ``high``, and stays true once it is."""
    while high - low > resolution:
        middle = low + (high - low) / 2
        if holds(middle):
            high = middle
        else:
            low = middle
    return high


def _spike(*, hours: float) -> float:
    """Phase 1 alone; over after 4 h (the floor from then on is phase 2, `_due_curve`'s)."""
    if hours >= PLAN_SPIKE_HOURS:
        return 0.0
    return PLAN_FLOOR ** (hours / PLAN_SPIKE_HOURS)


def _due_curve(*, hours_to_due: float) -> float:
    """Phases 2-5 as a function of the hours until due (negative once past)."""
    if hours_to_due >= PLAN_RESURFACE_HOURS:
        return PLAN_FLOOR
    if hours_to_due >= 0:
        ease = (1 + math.cos(math.pi * hours_to_due / PLAN_RESURFACE_HOURS)) / 2
        return PLAN_FLOOR + (1.0 - PLAN_FLOOR) * ease
    past = -hours_to_due
    if past <= PLAN_GRACE_HOURS:
        ease = (1 + math.cos(math.pi * past / PLAN_GRACE_HOURS)) / 2
        return PLAN_GRACE_END + (1.0 - PLAN_GRACE_END) * ease
    return PLAN_GRACE_END * 0.5 ** ((past - PLAN_GRACE_HOURS) / PLAN_OVERDUE_HALF_LIFE_HOURS)


def _hours_between(start: datetime, end: datetime) -> float:
    return max(0.0, (end - start) / _HOUR)


def _check_type(type: str) -> None:
    if type not in TYPES:
        raise ValueError(
            f"Unknown working-memory type {type!r}; expected one of {', '.join(sorted(TYPES))}."
        )


def _check_aware(**moments: datetime | None) -> None:
    for name, moment in moments.items():
        if moment is not None and (moment.tzinfo is None or moment.utcoffset() is None):
            raise ValueError(f"{name} must be a timezone-aware datetime, got naive {moment!r}.")


def _check_pressure(pressure: float) -> None:
    if not (math.isfinite(pressure) and pressure >= 0):
        raise ValueError(f"pressure must be a finite number >= 0, got {pressure!r}.")
