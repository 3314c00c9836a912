"""The scripted conversation of ``test_conversation`` carried past sixty turns, with the Mirror
checking its trigger after every turn as its schedule would: summaries come into the context
exactly when the turns they cover fall out of Recent, and every section stays inside its budget.
"""

import itertools
from datetime import timedelta

import pytest

from heart.models import ContextSnapshot
from heart.services import turn_submit
from heart.tasks import run_turns_task
from mirror.models import Summary
from mirror.run import mirror_run
from tests.fakeapi import FakeReply
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
    for n in range(35)
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


def oldest_recent(snapshot: ContextSnapshot) -> int:
    return min(i for ids in snapshot.items_included["recent"].values() for i in ids)


def test_it_brings_summaries_in_exactly_as_turns_leave_recent_within_budgets(
    long_conversation,
):
    assert len(long_conversation) == 65
    pools = sum(BUDGETS[f"BUDGET_POOL_{p}"] for p in ("USER", "SAY", "DO", "FLEX"))
    firsts = dict(Summary.objects.values_list("id", "first_event_id"))
    lasts = dict(Summary.objects.values_list("id", "last_event_id"))
    for snapshot, existing in long_conversation:
        shown = snapshot.items_included["summaries"]
        out_of_recent = {i for i, first in existing.items() if first < oldest_recent(snapshot)}
        # Only summaries whose first turn has left Recent, never two covering the same event.
        assert set(shown) <= out_of_recent
        spans = sorted((firsts[i], lasts[i]) for i in shown)
        assert all(a[1] < b[0] for a, b in itertools.pairwise(spans))
        # As soon as one has left Recent, the newest such summary is in the context.
        if out_of_recent:
            newest = max(lasts[i] for i in out_of_recent)
            assert max(lasts[i] for i in shown) == newest
        else:
            assert "## Summaries" not in snapshot.assembled_user
        counts = snapshot.token_counts
        assert counts["summaries"] <= BUDGETS["BUDGET_SUMMARIES"]
        assert counts["lingering"] <= BUDGETS["BUDGET_WORKING_MEMORY"]
        assert counts["recalled"] <= BUDGETS["BUDGET_RECALL"]
        assert counts["recent"] <= pools
    assert Summary.objects.filter(level="L0").count() >= 3
    assert Summary.objects.filter(level="L1").exists()

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
        assert max(lasts[i] for i in shown_after) >= lasts[summary_id]
