"""A scripted conversation of thirty turns on a fixed clock, asserting at named turns."""

from datetime import UTC, datetime, timedelta

import pytest

from bench.fakeapi import FakeReply
from gem.models import Fragment, WorkingMemory
from gem.selectors import gem_current, working_memory_scored
from heart.models import ContextSnapshot
from heart.services import turn_submit
from heart.tasks import run_turns_task

pytestmark = pytest.mark.django_db(databases="__all__")

MONDAY = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
BUDGETS = {
    "BUDGET_WORKING_MEMORY": 36,
    "BUDGET_RECALL": 120,
    "BUDGET_SUMMARIES": 100,
    "BUDGET_POOL_USER": 60,
    "BUDGET_POOL_SAY": 60,
    "BUDGET_POOL_DO": 40,
    "BUDGET_POOL_FLEX": 40,
}
CHATTER = "and the rain kept on against the window all afternoon while we talked"

# (when, what luna writes, what the companion answers)
SCRIPT = [
    ("mon 09:00", "<luna>morning</luna>", "<say>Morning, luna.</say>"),
    ("mon 09:30", "<luna><plan>dentist thursday at 10am</plan></luna>", "<say>Noted.</say>"),
    ("mon 09:40", "<luna><pin>tea without sugar, always</pin></luna>", "<say>Yes.</say>"),
    (
        "mon 09:50",
        "<luna><pin>no calls after nine, they wake the house</pin></luna>",
        "<say>ok</say>",
    ),
    ("mon 20:00", "<luna>evening</luna>", "<say>Evening.</say>"),  # 5: plan submerged
    ("tue 09:00", "<luna>what to wear?</luna>", "<say>Let me look.</say> recall(fairy)"),
    ("tue 09:05", "<luna>well?</luna>", "<say>The crewneck.</say>"),  # 7: recall arrives
    ("tue 09:10", "<luna>thanks</luna>", "<say>Any time.</say>"),  # 8: and is gone again
    ("wed 10:00", "<luna>hi</luna>", "<say>Hi.</say>"),  # 9: plan rising
    ("wed 10:05", "<luna>busy day</luna>", "<say>Mm.</say><feeling>a little restless</feeling>"),
    ("wed 10:10", "<luna>more</luna>", "<say>Go on.</say><feeling>locked in</feeling>"),
    ("wed 10:15", "<luna>done</luna>", "<say>Good.</say><feeling>fully wired</feeling>"),  # 12
    ("wed 11:00", "<luna>photo</luna>", "<say>Soft.</say><desc>hasuki: grey crewneck</desc>"),
    ("wed 11:05", "<luna>room</luna>", "<say>Warm.</say><desc>room: fairy lights</desc>"),
    ("wed 11:10", "<luna>new coat</luna>", "<say>Oh.</say><desc>hasuki: knitted overcoat</desc>"),
    ("thu 08:00", "<luna>today's the dentist</luna>", "<say>I know.</say>"),  # 16: resurfaced
    ("thu 11:00", "<luna>back from it</luna>", "<say>Well done.</say><plan>done: dentist</plan>"),
    (
        "thu 11:05",
        "<luna>sugar is fine now</luna>",
        "<say>Noted.</say><pin>drop: sugar in tea</pin>",
    ),
] + [
    (
        f"thu {12 + n // 6:02d}:{(n % 6) * 10:02d}",
        f"<luna>{CHATTER} {n}</luna>",
        f"<say>{CHATTER}, I said, {n}</say><do>{CHATTER} {n}</do>",
    )
    for n in range(12)
]
DAYS = {"mon": 0, "tue": 1, "wed": 2, "thu": 3}


def at(when: str) -> datetime:
    day, clock = when.split()
    hours, minutes = map(int, clock.split(":"))
    return MONDAY.replace(hour=hours, minute=minutes) + timedelta(days=DAYS[day])


@pytest.fixture
def conversation(fake_api, settings):
    for name, value in BUDGETS.items():
        setattr(settings, name, value)
    Fragment.objects.create(key="fairy", ambient="White softness.", inventory="Grey crewneck.")
    played = {}

    def play_until(turn_number: int):
        while len(played) < turn_number:
            when, text, reply = SCRIPT[len(played)]
            fake_api.push(FakeReply(reply))
            turn = turn_submit(text=text, actor="luna", at=at(when), enqueue=False)
            run_turns_task(turn.pk)
            turn.refresh_from_db()
            assert turn.status == "done", turn.error
            played[len(played) + 1] = ContextSnapshot.objects.get(turn=turn.pk)
        return played

    return play_until


def plan_score(when: str) -> float:
    scored = working_memory_scored(gem_current().working_memory, now=at(when), current_turn=0)
    return next(score for item, score in scored if item.type == "plan")


def test_it_plays_thirty_turns_keeping_every_rule(conversation):
    assert len(SCRIPT) == 30
    snapshots = conversation(5)
    plan = WorkingMemory.objects.get(type="plan")
    assert plan.due == datetime(2026, 3, 5, 10, 0, tzinfo=UTC)
    # Turn 5: the plan has submerged to its floor and lost its place to the pins.
    assert plan_score("mon 20:00") == pytest.approx(0.08)
    assert plan.pk not in snapshots[5].items_included["lingering"]
    assert "tea without sugar" in snapshots[5].assembled_user

    snapshots = conversation(8)
    # Recall asked for on turn 6 is present on turn 7 only.
    assert "## Recalled" not in snapshots[6].assembled_user
    assert "### fairy (inventory)\nGrey crewneck." in snapshots[7].assembled_user
    assert "## Recalled" not in snapshots[8].assembled_user

    snapshots = conversation(12)
    # Turn 9: 24 hours before due the plan is halfway up its resurfacing curve.
    assert 0.5 < plan_score("wed 10:00") < 0.6
    # Turns 10-12: one feeling slot, each new feeling supersedes the last.
    feelings = dict(WorkingMemory.objects.filter(type="feeling").values_list("content", "status"))
    assert feelings == {
        "a little restless": "superseded",
        "locked in": "superseded",
        "fully wired": "active",
    }

    snapshots = conversation(16)
    descs = dict(WorkingMemory.objects.filter(type="desc").values_list("content", "status"))
    assert descs == {
        "grey crewneck": "superseded",
        "fairy lights": "active",
        "knitted overcoat": "active",
    }
    # Turn 16: two hours before due, the plan has resurfaced above the pins.
    assert plan_score("thu 08:00") > 0.95
    assert plan.pk in snapshots[16].items_included["lingering"]

    snapshots = conversation(30)
    statuses = dict(
        WorkingMemory.objects.filter(type__in=["plan", "pin"]).values_list("content", "status")
    )
    assert statuses == {
        "dentist thursday at 10am": "resolved",
        "tea without sugar, always": "dropped",
        "no calls after nine, they wake the house": "active",
    }
    # Long chatter fills the pools: overflow goes to flex and the oldest lines drop.
    assert any(s.items_included["recent_flex"] for s in snapshots.values())
    assert sum(snapshots[30].items_included["dropped"]["recent"].values()) > 0
    # The budgets are hard caps at every turn.
    pools = sum(BUDGETS[f"BUDGET_POOL_{p}"] for p in ("USER", "SAY", "DO", "FLEX"))
    for snapshot in snapshots.values():
        counts = snapshot.token_counts
        assert counts["lingering"] <= BUDGETS["BUDGET_WORKING_MEMORY"]
        assert counts["recalled"] <= BUDGETS["BUDGET_RECALL"]
        assert counts["summaries"] <= BUDGETS["BUDGET_SUMMARIES"]
        assert counts["recent"] <= pools
