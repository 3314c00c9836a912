import itertools
import math
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gem import decay
from gem.models import WorkingMemoryType

pytestmark = pytest.mark.store_free

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
H = timedelta(hours=1)
MICROSECOND = timedelta(microseconds=1)
EXPONENTIAL_TYPES = sorted(decay.HALF_LIVES)

fast = settings(max_examples=150)


def wm_score(type, *, hours=0.0, turns=0, pressure=0.0, due=None):
    return decay.score(
        type=type,
        refreshed_at=T0,
        now=T0 + hours * H,
        created_turn=10,
        current_turn=10 + turns,
        due=due,
        pressure=pressure,
    )


def plan_at(hours, *, due_in):
    """The plan curve ``hours`` after a refresh at T0, for a plan due ``due_in`` hours after T0."""
    return decay.plan_curve(refreshed_at=T0, now=T0 + hours * H, due=T0 + due_in * H)


def test_it_knows_every_working_memory_type_of_the_model():
    assert set(WorkingMemoryType.values) == decay.TYPES


@pytest.mark.parametrize(
    ("type", "hours", "turns"),
    [
        ("feeling", 2, 3),
        ("thought", 12, 8),
        ("pattern", 168, 60),
        ("desc", 72, 40),
        ("pin", 336, 100),
    ],
)
def test_it_halves_at_each_half_life(type, hours, turns):
    assert wm_score(type) == 1.0
    assert wm_score(type, hours=hours) == pytest.approx(0.5)
    assert wm_score(type, turns=turns) == pytest.approx(0.5)
    assert wm_score(type, hours=hours, turns=turns) == pytest.approx(0.25)
    assert wm_score(type, hours=2 * hours) == pytest.approx(0.25)


def test_it_keeps_secrets_at_one_forever():
    assert wm_score("secret", hours=24 * 365 * 10, turns=100_000, pressure=5) == 1.0


def test_it_keeps_untimed_plans_at_one_forever():
    assert wm_score("plan", hours=24 * 365 * 10, turns=100_000) == 1.0


def test_it_ignores_turns_for_timed_plans():
    due = T0 + 100 * H
    assert wm_score("plan", hours=50, turns=1000, due=due) == plan_at(50, due_in=100)


def test_it_counts_no_turns_when_the_creation_turn_is_unknown():
    result = decay.score(
        type="feeling", refreshed_at=T0, now=T0, created_turn=None, current_turn=99
    )
    assert result == 1.0


def test_it_clamps_negative_elapsed_to_zero():
    assert wm_score("feeling", hours=-5) == 1.0
    assert wm_score("feeling", turns=-5) == 1.0
    assert plan_at(-3, due_in=200) == 1.0


def test_it_halves_the_turn_half_lives_under_pressure_one_and_leaves_the_hours():
    assert wm_score("thought", turns=8, pressure=1) == pytest.approx(0.25)
    assert wm_score("thought", turns=4, pressure=1) == pytest.approx(0.5)
    assert wm_score("thought", hours=12, pressure=1) == pytest.approx(0.5)


@given(fill=st.floats(allow_nan=True, allow_infinity=True), strength=st.floats(0, 10))
def test_the_pressure_is_the_strength_times_the_fill_kept_to_one(fill, strength):
    pressure = decay.pressure_from_fill(fill=fill, strength=strength)
    assert 0.0 <= pressure <= strength
    assert decay.pressure_from_fill(fill=fill, strength=0.0) == 0.0
    if math.isfinite(fill) and 0 <= fill <= 1:
        assert pressure == pytest.approx(strength * fill)


def test_it_leaves_scores_alone_under_no_pressure():
    assert wm_score("thought", hours=12, pressure=0) == wm_score("thought", hours=12)
    assert wm_score("thought", hours=12, pressure=0) == pytest.approx(0.5)


@pytest.mark.parametrize("pressure", [-0.5, math.inf, math.nan])
def test_it_rejects_a_negative_or_non_finite_pressure(pressure):
    with pytest.raises(ValueError, match="pressure"):
        wm_score("thought", pressure=pressure)


def test_it_rejects_an_unknown_type():
    with pytest.raises(ValueError, match="Unknown working-memory type 'mood'"):
        wm_score("mood")
    with pytest.raises(ValueError, match="Unknown working-memory type"):
        decay.is_gone_for_good(type="mood", refreshed_at=T0, now=T0, created_turn=1, current_turn=1)


@pytest.mark.parametrize("naive", ["refreshed_at", "now", "due"])
def test_it_rejects_naive_datetimes(naive):
    moments = {"refreshed_at": T0, "now": T0 + H, "due": T0 + 100 * H}
    moments[naive] = moments[naive].replace(tzinfo=None)
    with pytest.raises(ValueError, match=f"{naive} must be a timezone-aware datetime"):
        decay.score(type="plan", created_turn=1, current_turn=1, **moments)
    with pytest.raises(ValueError, match="timezone-aware"):
        decay.plan_curve(**moments)


def test_it_rejects_naive_datetimes_even_for_secrets():
    with pytest.raises(ValueError, match="timezone-aware"):
        decay.score(
            type="secret",
            refreshed_at=T0.replace(tzinfo=None),
            now=T0,
            created_turn=1,
            current_turn=1,
        )


def test_it_compares_datetimes_across_time_zones():
    paris = T0.astimezone(timezone(timedelta(hours=1)))
    result = decay.score(
        type="feeling", refreshed_at=paris, now=T0 + 2 * H, created_turn=1, current_turn=1
    )
    assert result == pytest.approx(0.5)


# The plan submersion curve, for a plan due 10 days (240 h) after its refresh.


def test_it_spikes_a_new_plan_to_one():
    assert plan_at(0, due_in=240) == 1.0


def test_it_decays_the_spike_exponentially_to_the_floor_at_four_hours():
    assert plan_at(2, due_in=240) == pytest.approx(math.sqrt(0.08))
    assert plan_at(4, due_in=240) == pytest.approx(decay.PLAN_FLOOR)
    assert plan_at(1, due_in=240) > plan_at(2, due_in=240) > plan_at(3, due_in=240) > 0.08


def test_it_keeps_a_plan_submerged_at_the_floor():
    for hours in (4, 5, 24, 100, 191, 192):
        assert plan_at(hours, due_in=240) == pytest.approx(0.08)


def test_it_resurfaces_a_plan_in_the_two_days_before_due():
    assert plan_at(240 - 36, due_in=240) == pytest.approx(0.08 + 0.92 * (1 - math.sqrt(0.5)) / 2)
    assert plan_at(240 - 24, due_in=240) == pytest.approx(0.54)
    assert plan_at(240 - 12, due_in=240) == pytest.approx(0.08 + 0.92 * (1 + math.sqrt(0.5)) / 2)
    rising = [plan_at(240 - before, due_in=240) for before in range(48, -1, -1)]
    assert rising == sorted(rising)


def test_a_hidden_plan_scores_nothing_until_its_window_and_its_curve_from_then():
    due = T0 + 100 * H

    def hidden_at(hours: float) -> float:
        moment = T0 + hours * H
        kwargs = {"type": "plan", "refreshed_at": T0, "now": moment, "due": due}
        return decay.score(**kwargs, created_turn=1, current_turn=1, hidden=True)

    assert hidden_at(0) == hidden_at(51.9) == 0.0
    assert hidden_at(76) == plan_at(76, due_in=100) == pytest.approx(0.54)
    assert decay.score(
        type="thought", refreshed_at=T0, now=T0, created_turn=1, current_turn=1, hidden=True
    ) == pytest.approx(1.0)


def test_a_hidden_plan_surfaces_from_two_days_before_due_and_stays_surfaced():
    due = datetime(2026, 12, 10, 18, tzinfo=UTC)
    opens = due - timedelta(hours=decay.PLAN_RESURFACE_HOURS)

    assert not decay.hidden_plan_surfaces(due=due, now=opens - timedelta(seconds=1))
    assert decay.hidden_plan_surfaces(due=due, now=opens)
    assert decay.hidden_plan_surfaces(due=due, now=due + timedelta(days=3))
    with pytest.raises(ValueError):
        decay.hidden_plan_surfaces(due=due, now=datetime(2026, 12, 1))


def test_it_peaks_at_one_on_the_due_date():
    assert plan_at(240, due_in=240) == pytest.approx(1.0)


def test_it_gives_an_overdue_plan_a_grace_down_to_half_over_a_day():
    assert plan_at(240 + 12, due_in=240) == pytest.approx(0.75)
    assert plan_at(240 + 24, due_in=240) == pytest.approx(0.5)
    assert plan_at(240 + 1, due_in=240) > 0.99


def test_it_halves_an_overdue_plan_every_day_after_the_grace():
    assert plan_at(240 + 48, due_in=240) == pytest.approx(0.25)
    assert plan_at(240 + 72, due_in=240) == pytest.approx(0.125)
    assert not decay.is_surfacing(plan_at(240 + 24 + 24 * 6, due_in=240))


def test_it_never_buries_a_plan_made_shortly_before_due():
    scores = [plan_at(minutes / 60, due_in=10) for minutes in range(0, 10 * 60 + 1)]
    assert min(scores) > 0.9
    assert scores[0] == 1.0
    assert scores[-1] == pytest.approx(1.0)


def test_it_starts_a_plan_made_overdue_in_its_grace_or_decay_with_no_spike():
    due = T0 - 2 * H
    assert decay.plan_curve(refreshed_at=T0, now=T0, due=due) == pytest.approx(
        0.75 + 0.25 * math.cos(math.pi * 2 / 24)
    )
    long_overdue = T0 - 48 * H
    assert decay.plan_curve(refreshed_at=T0, now=T0, due=long_overdue) == pytest.approx(0.25)


def test_it_surfaces_from_the_threshold_up():
    assert decay.is_surfacing(decay.FLOOR_THRESHOLD)
    assert decay.is_surfacing(1.0)
    assert not decay.is_surfacing(0.0099)


def gone(type, *, hours=0.0, turns=0, due_in=None, pressure=0.0):
    return decay.is_gone_for_good(
        type=type,
        refreshed_at=T0,
        now=T0 + hours * H,
        created_turn=10,
        current_turn=10 + turns,
        due=None if due_in is None else T0 + due_in * H,
        pressure=pressure,
    )


def test_it_sweeps_a_faded_feeling():
    # 0.5 ** 7 ≈ 0.0078 < 0.01; 0.5 ** 6 ≈ 0.0156.
    assert gone("feeling", hours=14)
    assert not gone("feeling", hours=12)
    assert gone("thought", turns=8 * 7)
    assert gone("feeling", hours=6, turns=12)


def test_it_never_sweeps_secrets_or_untimed_plans():
    assert not gone("secret", hours=1e6, turns=10**6)
    assert not gone("plan", hours=1e6, turns=10**6)


def test_it_never_sweeps_a_plan_still_ahead_of_its_due():
    assert not gone("plan", hours=100, due_in=24 * 365)


def test_it_sweeps_a_plan_long_past_due():
    assert gone("plan", hours=240 + 24 * 8, due_in=240)
    assert not gone("plan", hours=240 + 24 * 2, due_in=240)


def test_it_decides_the_sweep_without_pressure_which_can_fall_again():
    # 0.5 ** 4 under no pressure, 0.5 ** 8 under pressure one: still comes back.
    assert wm_score("feeling", turns=12, pressure=1) < decay.FLOOR_THRESHOLD
    assert not gone("feeling", turns=12, pressure=1)


# Properties.

any_type = st.sampled_from(sorted(decay.TYPES))
hours_st = st.floats(min_value=0, max_value=24 * 365 * 5, allow_nan=False)
turns_st = st.integers(min_value=0, max_value=100_000)
pressure_st = st.floats(min_value=0, max_value=100, allow_nan=False)
due_st = st.none() | st.floats(min_value=-24 * 400, max_value=24 * 400).map(lambda h: T0 + h * H)


@fast
@given(type=any_type, hours=hours_st, turns=turns_st, pressure=pressure_st, due=due_st)
def test_it_always_scores_between_zero_and_one(type, hours, turns, pressure, due):
    assert 0.0 <= wm_score(type, hours=hours, turns=turns, pressure=pressure, due=due) <= 1.0


@fast
@given(
    type=st.sampled_from(EXPONENTIAL_TYPES),
    hours=hours_st,
    more_hours=hours_st,
    turns=turns_st,
    more_turns=turns_st,
    pressure=pressure_st,
)
def test_it_only_lowers_scores_as_hours_and_turns_pass(
    type, hours, more_hours, turns, more_turns, pressure
):
    before = wm_score(type, hours=hours, turns=turns, pressure=pressure)
    assert wm_score(type, hours=hours + more_hours, turns=turns, pressure=pressure) <= before
    assert wm_score(type, hours=hours, turns=turns + more_turns, pressure=pressure) <= before


@fast
@given(
    due_in=st.floats(min_value=-24 * 30, max_value=24 * 30),
    hours=st.floats(min_value=-24, max_value=24 * 120),
)
def test_it_keeps_the_plan_curve_between_zero_and_one(due_in, hours):
    assert 0.0 <= plan_at(hours, due_in=due_in) <= 1.0


@fast
@given(
    due_in=st.floats(min_value=0, max_value=24 * 30),
    fraction=st.floats(min_value=0, max_value=1),
)
def test_it_keeps_a_plan_above_the_floor_until_its_grace_ends(due_in, fraction):
    hours = fraction * (due_in + decay.PLAN_GRACE_HOURS)
    assert plan_at(hours, due_in=due_in) >= decay.PLAN_FLOOR - 1e-12


@fast
@given(
    due_in=st.floats(min_value=-24 * 10, max_value=24 * 30),
    boundary=st.sampled_from(["spike end", "resurface", "due", "grace end"]),
)
def test_it_has_no_jumps_at_the_phase_boundaries(due_in, boundary):
    at = {
        "spike end": decay.PLAN_SPIKE_HOURS,
        "resurface": due_in - decay.PLAN_RESURFACE_HOURS,
        "due": due_in,
        "grace end": due_in + decay.PLAN_GRACE_HOURS,
    }[boundary]
    epsilon = 1 / 3600  # one second
    if at - epsilon < 0:  # before the refresh the curve is clamped, not continued
        return
    assert abs(plan_at(at + epsilon, due_in=due_in) - plan_at(at - epsilon, due_in=due_in)) < 1e-3


@fast
@given(
    type=st.sampled_from([*EXPONENTIAL_TYPES, "plan"]),
    hours=hours_st,
    turns=turns_st,
    later_hours=hours_st,
    later_turns=turns_st,
    pressure=pressure_st,
    due_in=st.floats(min_value=-24 * 30, max_value=24 * 30),
)
def test_it_sweeps_only_what_stays_under_the_threshold(
    type, hours, turns, later_hours, later_turns, pressure, due_in
):
    if not gone(type, hours=hours, turns=turns, due_in=due_in, pressure=pressure):
        return
    for p in (0.0, pressure):
        due = T0 + due_in * H
        assert wm_score(type, hours=hours, turns=turns, pressure=p, due=due) < 0.01
        later = wm_score(
            type, hours=hours + later_hours, turns=turns + later_turns, pressure=p, due=due
        )
        assert later < 0.01


item_st = st.tuples(
    any_type,
    st.floats(min_value=-48, max_value=24 * 400).map(lambda h: T0 - h * H),
    st.none() | st.integers(min_value=0, max_value=1_000),
    due_st,
    st.booleans(),
)


@fast
@given(items=st.lists(item_st, max_size=30), turn=turns_st, pressure=pressure_st)
def test_it_scores_many_items_exactly_as_one_at_a_time(items, turn, pressure):
    scored = decay.scores(items, now=T0, current_turn=turn, pressure=pressure)
    assert scored == [
        decay.score(
            type=type,
            refreshed_at=refreshed_at,
            now=T0,
            created_turn=created_turn,
            current_turn=turn,
            due=due,
            pressure=pressure,
            hidden=hidden,
        )
        for type, refreshed_at, created_turn, due, hidden in items
    ]
    for (type, refreshed_at, created_turn, *_), value in zip(items, scored, strict=True):
        if type in decay.HALF_LIVES:  # the formula of the module docstring, bit for bit
            hours = max(0.0, (T0 - refreshed_at) / H)
            turns = max(0, turn - created_turn) if created_turn is not None else 0
            life = decay.HALF_LIVES[type]
            shrink = 1.0 + pressure
            assert value == 0.5 ** (hours / life.hours) * 0.5 ** (turns * shrink / life.turns)


def test_it_checks_every_item_it_scores_many_of():
    naive = datetime(2026, 3, 1, 9, 0)
    good = ("thought", T0, 1, None, False)
    with pytest.raises(ValueError, match="refreshed_at must be a timezone-aware"):
        decay.scores([good, ("thought", naive, 1, None, False)], now=T0, current_turn=2)
    with pytest.raises(ValueError, match="due must be a timezone-aware"):
        decay.scores([good, ("feeling", T0, 1, naive, False)], now=T0, current_turn=2)
    with pytest.raises(ValueError, match="Unknown working-memory type"):
        decay.scores([good, ("mood", T0, 1, None, False)], now=T0, current_turn=2)
    with pytest.raises(ValueError, match="now must be a timezone-aware"):
        decay.scores([good], now=naive, current_turn=2)
    with pytest.raises(ValueError, match="pressure"):
        decay.scores([good], now=T0, current_turn=2, pressure=-1)


# Sampling the curve for a picture: decay's own scores at given moments.

steps_st = st.lists(
    st.tuples(st.floats(min_value=0, max_value=24 * 30), st.integers(min_value=0, max_value=500)),
    min_size=1,
    max_size=40,
)


def walk(steps, *, start_hours=0.0, start_turn=10):
    """Moments (when, turn counter then) from cumulated steps of hours and turns: time and
    the counter only move forward."""
    hours, turn, moments = start_hours, start_turn, []
    for more_hours, more_turns in steps:
        hours, turn = hours + more_hours, turn + more_turns
        moments.append((T0 + hours * H, turn))
    return moments


@fast
@given(
    type=any_type,
    created_turn=st.none() | st.integers(min_value=0, max_value=1_000),
    due=due_st,
    pressure=pressure_st,
    moments=st.lists(
        st.tuples(
            st.floats(min_value=-48, max_value=24 * 400).map(lambda h: T0 + h * H),
            st.integers(min_value=0, max_value=2_000),
        ),
        max_size=30,
    ),
)
def test_it_samples_the_curve_with_the_scores_decay_gives(
    type, created_turn, due, pressure, moments
):
    points = decay.curve(
        type=type,
        refreshed_at=T0,
        created_turn=created_turn,
        moments=moments,
        due=due,
        pressure=pressure,
    )
    assert [(p.at, p.turn) for p in points] == moments
    for point in points:
        assert point.score == decay.score(
            type=type,
            refreshed_at=T0,
            now=point.at,
            created_turn=created_turn,
            current_turn=point.turn,
            due=due,
            pressure=pressure,
        )


@fast
@given(type=st.sampled_from(EXPONENTIAL_TYPES), steps=steps_st, pressure=pressure_st)
def test_it_samples_an_exponential_curve_that_only_falls(type, steps, pressure):
    points = decay.curve(
        type=type, refreshed_at=T0, created_turn=10, moments=walk(steps), pressure=pressure
    )
    scores = [p.score for p in points]
    assert scores == sorted(scores, reverse=True)


@fast
@given(due_in=st.floats(min_value=-24 * 30, max_value=24 * 30), steps=steps_st)
def test_it_samples_a_timed_plan_that_only_falls_once_past_due(due_in, steps):
    due = T0 + due_in * H
    moments = walk(steps, start_hours=max(due_in, 0.0))
    points = decay.curve(type="plan", refreshed_at=T0, created_turn=10, moments=moments, due=due)
    scores = [p.score for p in points]
    assert scores == sorted(scores, reverse=True)


def phases_at(due_in, *, refreshed_in=0.0):
    return decay.plan_phases(refreshed_at=T0 + refreshed_in * H, due=T0 + due_in * H)


def test_it_names_the_five_phases_of_a_plan_due_in_ten_days():
    phases = phases_at(240)
    assert [(p.name, (p.start - T0) / H) for p in phases] == [
        ("drop", 0),
        ("floor", 4),
        ("rise", 192),
        ("grace", 240),
        ("fall", 264),
    ]
    assert [p.end for p in phases] == [p.start for p in phases[1:]] + [None]


def test_it_ends_the_drop_where_the_rise_overtakes_it_for_a_plan_due_soon():
    drop, rise, grace, fall = phases_at(10)
    assert (drop.name, rise.name, grace.name, fall.name) == ("drop", "rise", "grace", "fall")
    hours = (drop.end - T0) / H
    assert 0 < hours < decay.PLAN_SPIKE_HOURS
    # Just before, the drop is still falling; just after, the rise is climbing.
    second = 1 / 3600
    assert plan_at(hours - second, due_in=10) > plan_at(hours, due_in=10)
    assert plan_at(hours + 2 * second, due_in=10) > plan_at(hours + second, due_in=10)


def test_it_gives_a_plan_made_overdue_only_what_is_left_of_its_grace_and_its_fall():
    assert [p.name for p in phases_at(-5)] == ["grace", "fall"]
    assert phases_at(-5)[0].start == T0 and phases_at(-5)[0].end == T0 + 19 * H
    assert [(p.name, p.start, p.end) for p in phases_at(-30)] == [("fall", T0, None)]


def test_it_leaves_out_an_empty_floor():
    spike_and_rise = decay.PLAN_SPIKE_HOURS + decay.PLAN_RESURFACE_HOURS
    assert [p.name for p in phases_at(spike_and_rise)] == ["drop", "rise", "grace", "fall"]
    assert phases_at(spike_and_rise)[1].start == T0 + decay.PLAN_SPIKE_HOURS * H


@fast
@given(
    due_in=st.floats(min_value=-24 * 30, max_value=24 * 30),
    fractions=st.lists(st.floats(min_value=0, max_value=1), min_size=2, max_size=12),
)
@example(due_in=2.26e-10, fractions=[0.0, 0.0])  # due a microsecond after the refresh
def test_it_gives_a_plans_phases_in_order_each_with_its_shape(due_in, fractions):
    phases = phases_at(due_in)
    names = [p.name for p in phases]
    assert names == [name for name in decay.PLAN_PHASES if name in names]
    assert names[-1] == "fall" and phases[-1].end is None
    assert phases[0].start == T0
    assert [p.end for p in phases[:-1]] == [p.start for p in phases[1:]]
    assert all(p.start < p.end for p in phases[:-1])
    if T0 + due_in * H > T0 + 2 * MICROSECOND:  # room for a drop and a rise, to the microsecond
        assert names[0] == "drop" and "rise" in names and "grace" in names
        assert plan_at(due_in, due_in=due_in) == pytest.approx(1.0)
    for phase in phases:
        end = phase.end or phase.start + 30 * 24 * H
        hours = sorted((phase.start + f * (end - phase.start) - T0) / H for f in fractions)
        scores = [plan_at(h, due_in=due_in) for h in hours]
        tolerance = 1e-9  # where the rise overtakes the drop: found to the microsecond
        pairs = list(itertools.pairwise(scores))
        if phase.name == "floor":
            assert all(s == decay.PLAN_FLOOR for s in scores)
        elif phase.name == "rise":
            assert all(later >= earlier - tolerance for earlier, later in pairs)
        else:
            assert all(later <= earlier + tolerance for earlier, later in pairs)


def crossing(type, *, turns_per_hour=0.0, due_in=None, hours=24 * 365, pressure=0.0):
    return decay.floor_crossing(
        type=type,
        refreshed_at=T0,
        created_turn=10,
        start=T0,
        end=T0 + hours * H,
        turn_at=lambda moment: 10 + math.floor(turns_per_hour * (moment - T0) / H),
        due=None if due_in is None else T0 + due_in * H,
        pressure=pressure,
    )


def test_it_finds_when_a_feeling_falls_under_the_floor_to_the_second():
    # 0.5 ** (hours / 2) = 0.01 at hours = 2 * log2(100).
    found = crossing("feeling")
    assert abs((found - T0) / H - 2 * math.log2(100)) < 1 / 3600


def test_it_finds_a_timed_plan_falls_under_the_floor_days_after_its_grace():
    found = crossing("plan", due_in=240, turns_per_hour=50)
    overdue = decay.PLAN_OVERDUE_HALF_LIFE_HOURS * math.log2(decay.PLAN_GRACE_END / 0.01)
    assert abs((found - T0) / H - (240 + 24 + overdue)) < 1 / 3600


def test_it_finds_no_crossing_for_what_never_decays_or_stays_above_to_the_end():
    assert crossing("secret", turns_per_hour=100) is None
    assert crossing("plan", turns_per_hour=100) is None
    assert crossing("pin", hours=24) is None


@fast
@given(
    type=st.sampled_from([*EXPONENTIAL_TYPES, "plan"]),
    turns_per_hour=st.floats(min_value=0, max_value=20),
    due_in=st.floats(min_value=-24 * 30, max_value=24 * 30),
    hours=st.floats(min_value=0, max_value=24 * 200),
    pressure=st.floats(min_value=0, max_value=3),
)
def test_it_finds_the_first_second_under_the_floor(type, turns_per_hour, due_in, hours, pressure):
    found = crossing(
        type, turns_per_hour=turns_per_hour, due_in=due_in, hours=hours, pressure=pressure
    )

    def score_at(moment):
        return decay.score(
            type=type,
            refreshed_at=T0,
            now=moment,
            created_turn=10,
            current_turn=10 + math.floor(turns_per_hour * (moment - T0) / H),
            due=T0 + due_in * H,
            pressure=pressure,
        )

    end = T0 + hours * H
    if found is None:
        assert score_at(end) >= decay.FLOOR_THRESHOLD
        return
    assert T0 <= found <= end
    assert score_at(found) < decay.FLOOR_THRESHOLD
    if found > T0:
        assert score_at(found - timedelta(seconds=1)) >= decay.FLOOR_THRESHOLD
