"""``python -m bench answerable``: the questions of a small conversation put to its context."""

import json

import pytest

from bench.answerable import conversation_answerable, figures_lines
from bench.cli import main
from events.models import Event
from tests.bench.test_continuity import QUESTIONS, conversation

OPEN = {
    "conversation": "c1",
    "question": "What did Ana see at the harbour on the first evening?",
    "evidence": ["c1:D1:9"],
    "category": "open-domain",
}
ADVERSARIAL = {
    "conversation": "c1",
    "question": "What did Ben cook?",
    "evidence": ["c1:D1:2"],
    "category": "adversarial",
}


@pytest.fixture
def small_recent(settings):
    """Pools small enough that the first evenings leave Recent by the end, and no summary: what
    is found for the message is all that brings them back."""
    settings.BUDGET_SUMMARIES = 0
    settings.BUDGET_POOL_USER, settings.BUDGET_POOL_SAY = 120, 80
    settings.BUDGET_POOL_DO, settings.BUDGET_POOL_FLEX = 40, 60
    settings.COMPANION_OFFLINE = True


@pytest.mark.django_db(databases="__all__")
def test_each_question_is_put_at_both_moments_and_leaves_no_trace(small_recent):
    result = conversation_answerable(
        conversation=conversation(), questions=[*QUESTIONS, OPEN, ADVERSARIAL], mirror_every=10
    )

    rows = result["rows"]
    assert Event.objects.count() == 42  # every question's event was rolled back
    assert sorted((row["moment"], row["category"]) for row in rows) == [
        ("end", "open-domain"),
        ("end", "single-hop"),
        ("end", "temporal"),
        ("return", "open-domain"),
        ("return", "single-hop"),
        ("return", "temporal"),
    ]  # adversarial questions are not asked
    end = {row["category"]: row for row in rows if row["moment"] == "end"}
    # Found brings the sister's move back at the end, far behind Recent; a FIFO of the same
    # size and the project without finding do not have it.
    sister = end["single-hop"]
    assert sister["strict"] and sister["loose"] and sister["brought"] == ["Found"]
    assert not sister["fifo"] and not sister["unwoken"]
    # The system prompt is past the default model's cache minimum: every turn reads it cached.
    assert all(
        0 < row["system_tokens"] <= row["cached_tokens"] <= row["system_tokens"] + row["tokens"]
        for row in rows
    )

    lines = figures_lines([json.loads(json.dumps(result))])
    assert lines[0].split()[:5] == ["moment", "category", "questions", "strict", "loose"]
    assert any(line.startswith("end     all") for line in lines)
    assert "by the part that held them: Found" in lines[-2]
    assert "read from the cache (a bound: bench cache measures it)" in lines[-1]


@pytest.mark.store_free
def test_it_says_so_when_the_dataset_is_missing(capsys, tmp_path):
    assert main(["answerable", str(tmp_path / "none.json")]) == 1
    assert "none.json: no such file" in capsys.readouterr().err
