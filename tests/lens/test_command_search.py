"""``manage.py lens search`` and ``manage.py lens query`` (``lens eval``: test_evaluate.py)."""

import json
from datetime import UTC, datetime
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from gem.models import Fragment, WorkingMemory
from heart.ingest import event_record
from mirror.models import Summary

pytestmark = pytest.mark.django_db(databases="__all__")


def lens(*args):
    out = StringIO()
    call_command("lens", *args, stdout=out)
    return out.getvalue()


def test_search_prints_ranked_hits_with_the_turns_around_them():
    at = datetime(2026, 3, 1, 18, 0, tzinfo=UTC)
    event_record(text="where did you walk?", actor="ana", ts=at, identities=[])
    answer, _ = event_record(text="out to the lighthouse", actor="ben", ts=at, identities=[])
    Fragment.objects.create(key="lighthouse", ambient="The old lighthouse.")
    text = lens("search", "lighthouse", "--limit", "5")
    assert text.startswith("# Search: lighthouse")
    assert "`fragment:lighthouse`" in text and f"`event:{answer.pk}`" in text
    assert "   > ana: where did you walk?" in text
    assert "out to the **lighthouse**" in text


def test_search_prints_display_text_a_fragments_tier_and_marks_a_turn_beside_a_match():
    at = datetime(2026, 3, 1, 18, 0, tzinfo=UTC)
    for text, actor in [
        ("<say>Rain all day.</say>", "claude"),
        ("<luna>off to physio</luna>", "luna"),
        ("<say>Good luck!</say> recall(knee)", "claude"),
        ("<luna>home now</luna>", "luna"),
        ("<say>Welcome back.</say>", "claude"),
    ]:
        event_record(text=text, actor=actor, ts=at)
    Fragment.objects.create(key="knee", ambient="Mending.", recognition="Physio on Tuesdays.")
    text = lens("search", "physio", "--limit", "10")
    assert "`fragment:knee` · recognition" in text and "**Physio** on Tuesdays." in text
    assert "   > claude: Good luck!" in text and "Rain all day." in text
    assert "<say>" not in text and "recall(" not in text
    # The rain before the turn that says it, and the turn after the two that read it before
    # them (the index reads a turn with the two before it).
    assert text.count("· beside a match") == 2


def test_search_takes_kinds_and_an_actor():
    WorkingMemory.objects.create(type="thought", content="lighthouse again", actor="claude")
    Fragment.objects.create(key="lighthouse", ambient="The old lighthouse.")
    text = lens("search", "lighthouse", "--kinds", "wm", "--actor", "claude")
    assert "`wm:" in text and "fragment:" not in text


def test_search_finds_summaries_when_they_are_named():
    summary = Summary.objects.create(
        level="L1", first_event_id=4, last_event_id=12, content="A week of lighthouse walks."
    )
    Fragment.objects.create(key="lighthouse", ambient="The old lighthouse.")
    assert f"summary:{summary.pk}" not in lens("search", "lighthouse")
    text = lens("search", "lighthouse", "--kinds", "summary")
    assert f"1. `summary:{summary.pk}` · " in text and " · L1, events 4–12 · " in text
    assert "A week of **lighthouse** walks." in text and "fragment:" not in text


def test_search_says_what_is_wrong():
    with pytest.raises(CommandError, match="limit must be a whole number from 1 to 100"):
        lens("search", "tea", "--limit", "500")


def test_query_prints_json_with_the_filters_applied():
    WorkingMemory.objects.create(type="feeling", content="glad", valence=0.8, importance=0.9)
    WorkingMemory.objects.create(type="feeling", content="flat", valence=0.0)
    rows = json.loads(lens("query", "--emotion", "positive", "--min-importance", "0.5", "--json"))
    assert [row["content"] for row in rows] == ["glad"]
    assert "- `wm:" in lens("query", "--type", "feeling")


def test_query_names_the_bad_parameter():
    with pytest.raises(CommandError, match="last_n_days: must be at least 1"):
        lens("query", "--last-n-days", "0")
