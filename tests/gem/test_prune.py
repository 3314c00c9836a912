from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gem.prune import (
    LEAVING_FIRST,
    PERMANENT_TYPE,
    RECENT_DAYS,
    SOFT_IMPORTANCE,
    Candidate,
    Limits,
    Phase,
    phase_of,
    prune_plan,
)

NOW = datetime(2026, 11, 22, tzinfo=UTC)
STATUSES = ("active", "resolved", "dropped", "decayed", "superseded")
TYPES = ("feeling", "thought", "pattern", "desc", "plan", "pin", "secret")

candidates = st.lists(
    st.builds(
        Candidate,
        id=st.integers(1, 10_000),
        status=st.sampled_from(STATUSES),
        type=st.sampled_from(TYPES),
        importance=st.floats(0, 1),
        idle_since=st.integers(0, 200).map(lambda days: NOW - timedelta(days=days)),
        size=st.integers(1, 500),
    ),
    unique_by=lambda each: each.id,
    max_size=40,
)

pytestmark = pytest.mark.store_free
limits = st.builds(
    Limits,
    after_days=st.integers(1, 120),
    capacity=st.integers(1, 20_000),
    soft=st.just(0.8),
    hard=st.just(0.95),
    emergency=st.just(1.0),
    hard_target=st.just(0.7),
)


def idle_days(each: Candidate) -> float:
    return (NOW - each.idle_since) / timedelta(days=1)


@given(candidates, limits)
def test_active_items_never_leave_and_old_ones_always_do(items, limits):
    plan = prune_plan(items, now=NOW, limits=limits)
    chosen = set(plan.ids)
    assert not any(each.id in chosen for each in items if each.status == "active")
    assert all(
        each.id in chosen
        for each in items
        if each.status != "active" and idle_days(each) >= limits.after_days
    )
    assert plan.size_after == plan.size - sum(each.size for each in items if each.id in chosen)


@given(candidates, limits)
def test_secrets_leave_only_by_age_and_below_soft_only_age_counts(items, limits):
    plan = prune_plan(items, now=NOW, limits=limits)
    by_age = {
        each.id
        for each in items
        if each.status != "active" and idle_days(each) >= limits.after_days
    }
    secrets = {each.id for each in items if each.type == PERMANENT_TYPE}
    assert set(plan.ids) & secrets <= by_age
    if plan.phase is Phase.NONE:
        assert set(plan.ids) == by_age


@given(candidates, limits)
def test_soft_takes_unimportant_items_idle_a_month(items, limits):
    plan = prune_plan(items, now=NOW, limits=limits)
    if plan.phase >= Phase.SOFT:
        assert all(
            each.id in plan.ids
            for each in items
            if each.status != "active"
            and each.type != PERMANENT_TYPE
            and idle_days(each) >= RECENT_DAYS
            and each.importance < SOFT_IMPORTANCE
        )


@given(candidates, limits)
def test_hard_stops_under_its_target_or_when_nothing_more_may_leave(items, limits):
    plan = prune_plan(items, now=NOW, limits=limits)
    if plan.phase < Phase.HARD:
        return
    prunable = {each.id for each in items if each.status != "active"} - {
        each.id for each in items if each.type == PERMANENT_TYPE
    }
    target = limits.hard_target * limits.capacity
    assert plan.size_after < target or prunable <= set(plan.ids)
    # Replaced and given-up items go before any other that only hard pruning picks.
    by_rule = {
        each.id
        for each in items
        if idle_days(each) >= limits.after_days
        or (idle_days(each) >= RECENT_DAYS and each.importance < SOFT_IMPORTANCE)
        or (plan.phase is Phase.EMERGENCY and idle_days(each) >= RECENT_DAYS)
    }
    picked = [each for each in items if each.id in set(plan.ids) & prunable - by_rule]
    if any(each.status not in LEAVING_FIRST for each in picked):
        assert all(
            each.id in plan.ids
            for each in items
            if each.id in prunable and each.status in LEAVING_FIRST
        )


@given(st.integers(1, 10_000), st.integers(0, 20_000))
def test_the_phase_rises_with_the_fill(capacity, size):
    limits = Limits(
        after_days=90, capacity=capacity, soft=0.8, hard=0.95, emergency=1.0, hard_target=0.7
    )
    phase = phase_of(size, limits)
    assert (phase >= Phase.SOFT) == (size >= 0.8 * capacity)
    assert (phase >= Phase.HARD) == (size >= 0.95 * capacity)
    assert (phase is Phase.EMERGENCY) == (size >= capacity)


def test_hard_takes_superseded_and_dropped_first_then_the_least_important():
    old = NOW - timedelta(days=1)
    items = [
        Candidate(id=1, status="resolved", type="thought", importance=0.1, idle_since=old, size=10),
        Candidate(id=2, status="superseded", type="desc", importance=0.9, idle_since=old, size=10),
        Candidate(id=3, status="resolved", type="thought", importance=0.5, idle_since=old, size=10),
        Candidate(id=4, status="active", type="thought", importance=0.0, idle_since=old, size=10),
    ]
    # 40 bytes in 41: hard pruning, down to under 70 % (28.7 bytes): two items go.
    limits = Limits(after_days=90, capacity=41, soft=0.8, hard=0.95, emergency=1.0, hard_target=0.7)
    plan = prune_plan(items, now=NOW, limits=limits)
    assert plan.phase is Phase.HARD and plan.ids == (1, 2) and plan.size_after == 20
