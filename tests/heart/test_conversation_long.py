"""The scripted conversation of ``test_conversation`` carried to eighty turns, with the Mirror
checking its trigger after every turn as its schedule would: summaries come into the context
exactly when the turns they cover fall out of Recent, the time just behind Recent in the finest
of them, an L1 only for older time (never while finer ones cover turns it shares with Recent),
and every section stays inside its budget.
"""

import itertools
import math
from datetime import timedelta

import pytest

from bench.fakeapi import FakeReply
from heart.models import ContextSnapshot
from heart.services import turn_submit
from heart.tasks import run_turns_task
from mirror.models import Summary
from mirror.run import mirror_run
from tests.heart.test_conversation import CHATTER, SCRIPT, at
from tests.mirror.conftest import CLEAN_MODEL, COMPRESS_MODEL, SUMMARISE_MODEL, answer

pytestmark = pytest.mark.django_db(databases="__all__")

# Pools big enough that Recent holds a score of turns, so a summary exists for a while before
# the turns it covers have left the window.
BUDGETS = {
    "BUDGET_WORKING_MEMORY": 36,
    "BUDGET_RECALL": 120,
    "BUDGET_SUMMARIES": 100,
    "BUDGET_POOL_USER": 400,
    "BUDGET_POOL_SAY": 400,
    "BUDGET_POOL_DO": 300,
    "BUDGET_POOL_FLEX": 100,
}
MORE = [
    (
        at("thu 14:00") + timedelta(minutes=10 * n),
        f"<luna>{CHATTER} {100 + n}</luna>",
        f"<say>{CHATTER}, I said, {100 + n}</say><do>{CHATTER} {100 + n}</do>",
    )
    for n in range(50)
]
LONG_SCRIPT = [(at(when), text, reply) for when, text, reply in SCRIPT] + MORE


@pytest.fixture
def long_conversation(fake_api, settings):
    for name, value in BUDGETS.items():
        setattr(settings, name, value)
    settings.MIRROR_CLEAN_MODEL = CLEAN_MODEL
    settings.MIRROR_COMPRESS_MODEL = COMPRESS_MODEL
    settings.MIRROR_SUMMARISE_MODEL = SUMMARISE_MODEL
    fake_api.responder = answer  # the Mirror's passes; the Heart's replies are scripted
    played = []
    for moment, text, reply in LONG_SCRIPT:
        existing = dict(
            Summary.objects.filter(superseded_by__isnull=True).values_list("id", "first_event_id")
        )
        fake_api.push(FakeReply(reply))
        turn = turn_submit(text=text, actor="luna", at=moment, enqueue=False)
        run_turns_task(turn.pk)
        turn.refresh_from_db()
        assert turn.status == "done", turn.error
        played.append((ContextSnapshot.objects.get(turn=turn.pk), existing))
        mirror_run(now=moment + timedelta(minutes=1))
    return played


def oldest_recent(snapshot: ContextSnapshot) -> float:
    """The oldest event Recent shows (infinity when it shows none: then it is the first turn)."""
    return min(recent_events(snapshot), default=math.inf)


def recent_events(snapshot: ContextSnapshot) -> set[int]:
    return {i for ids in snapshot.items_included["recent"].values() for i in ids}


RANK = {"L0": 0, "L1": 1, "L2": 2}


def test_it_brings_summaries_in_exactly_as_turns_leave_recent_within_budgets(
    long_conversation,
):
    assert len(long_conversation) == 80
    pools = sum(BUDGETS[f"BUDGET_POOL_{p}"] for p in ("USER", "SAY", "DO", "FLEX"))
    levels = dict(Summary.objects.values_list("id", "level"))
    firsts = dict(Summary.objects.values_list("id", "first_event_id"))
    lasts = dict(Summary.objects.values_list("id", "last_event_id"))

    def finer_covering(summary_id: int, event_id: int, existing) -> list[int]:
        return [
            i
            for i in existing
            if RANK[levels[i]] < RANK[levels[summary_id]] and firsts[i] <= event_id <= lasts[i]
        ]

    l1_kept_out_of_recent = l1_for_older_time = 0
    for snapshot, existing in long_conversation:
        shown = snapshot.items_included["summaries"]
        oldest = oldest_recent(snapshot)
        out_of_recent = {i for i, first in existing.items() if first < oldest}
        # Only summaries whose first turn has left Recent, never two covering the same event.
        assert set(shown) <= out_of_recent
        spans = sorted((firsts[i], lasts[i]) for i in shown)
        assert all(a[1] < b[0] for a, b in itertools.pairwise(spans))
        # A turn both in Recent and in a shown summary only when nothing finer covers it.
        for i in shown:
            for event_id in recent_events(snapshot) & set(range(firsts[i], lasts[i] + 1)):
                assert not finer_covering(i, event_id, existing)
        if out_of_recent:
            # The newest time behind Recent that a summary covers is shown, in the finest one.
            newest = min(oldest - 1, max(lasts[i] for i in out_of_recent))
            nearest = [i for i in shown if firsts[i] <= newest <= lasts[i]]
            assert nearest and not finer_covering(nearest[0], newest, existing)
        else:
            assert "## Summaries" not in snapshot.assembled_user
        l1s = [i for i in out_of_recent if levels[i] == "L1"]
        l1_kept_out_of_recent += any(lasts[i] >= oldest and i not in shown for i in l1s)
        l1_for_older_time += any(i in shown for i in l1s)
        counts = snapshot.token_counts
        assert counts["summaries"] <= BUDGETS["BUDGET_SUMMARIES"]
        assert counts["lingering"] <= BUDGETS["BUDGET_WORKING_MEMORY"]
        assert counts["recalled"] <= BUDGETS["BUDGET_RECALL"]
        assert counts["recent"] <= pools
    # Both happened: an L1 reaching into Recent left out for its L0, and an L1 standing for
    # older time once the budget no longer held all of its L0.
    assert l1_kept_out_of_recent and l1_for_older_time
    assert Summary.objects.filter(level="L0").count() >= 3
    assert Summary.objects.filter(level="L1").count() >= 2

    # Summaries written while their first turn was still in Recent wait for it to leave.
    waited = [
        (summary_id, before, after)
        for (before, existing), (after, _) in itertools.pairwise(long_conversation)
        for summary_id, first in existing.items()
        if oldest_recent(before) <= first < oldest_recent(after)
    ]
    assert waited
    for summary_id, before, after in waited:
        assert summary_id not in before.items_included["summaries"]
        shown_after = after.items_included["summaries"]
        reach = min(lasts[summary_id], oldest_recent(after) - 1)
        assert max(lasts[i] for i in shown_after) >= reach
