"""The turns benchmark's Gem and its timing: the index built after the log is the trigger's, the
text is the search benchmark's vocabulary, and one message in five names a fragment."""

import random
import re
import statistics
from collections import Counter
from datetime import UTC

import pytest
from django.db import connections
from django.utils import timezone
from hypothesis import given
from hypothesis import strategies as st

from bench.search import vocabulary
from bench.turns import (
    NAMING_SHARE,
    VOCABULARY_SEED,
    Conversation,
    TurnRunner,
    fragment_names,
    overhead_figures,
    synthetic_gem_build,
)
from events.models import Event
from gem.models import KEY_VALIDATOR, Fragment
from gem.waking import names_found, names_index, triggers_problem
from heart.models import ContextSnapshot
from silentstar.router import store_for

pytestmark = pytest.mark.django_db(databases="__all__")


def events_store():
    return connections[store_for("heart", "event")]


def index_rows(cursor):
    cursor.execute("SELECT rowid, content, speaker, dated, context FROM lens_event_fts ORDER BY 1")
    return cursor.fetchall()


def date_words(ts) -> str:
    """The trigger's date in words (UTC): ``Monday 8 May 2023 afternoon``."""
    ts = ts.astimezone(UTC)
    parts = [(5, "night"), (12, "morning"), (18, "afternoon"), (22, "evening"), (24, "night")]
    part = next(name for end, name in parts if ts.hour < end)
    return f"{ts:%A} {ts.day} {ts:%B} {ts.year} {part}"


def sqlite_only() -> None:
    if events_store().vendor != "sqlite":
        pytest.skip("the turns benchmark builds SQLite stores only")


def test_it_indexes_the_log_as_its_insert_trigger_does():
    sqlite_only()
    with events_store().cursor() as cursor:
        cursor.execute("PRAGMA cache_size")
        cache_before = cursor.fetchone()
    synthetic_gem_build(
        events=200, fragments=20, edges=30, working_memory=40, active=10, progress=lambda _: None
    )
    with events_store().cursor() as cursor:
        built = index_rows(cursor)
        cursor.execute("SELECT id, content, actor FROM heart_event ORDER BY id")
        log = cursor.fetchall()
        cursor.execute("PRAGMA cache_size")
        assert cursor.fetchone() == cache_before  # the build's larger cache is given back
    assert [row[0] for row in built] == [row[0] for row in log] and len(log) == 200
    said_at = dict(Event.objects.values_list("id", "ts"))
    for (event_id, content, speaker, dated, context), (_, said, actor) in zip(
        built, log, strict=True
    ):
        assert (event_id, content, speaker) == (event_id, said, actor)
        assert dated == date_words(said_at[event_id])
        # The trigger's context: the two events before, newest first.
        earlier = [row[1] for row in log if row[0] < event_id][-2:]
        assert context == " ".join(reversed(earlier))
    # The trigger is back: a new event is indexed on its own.
    later = Event.objects.create(ts=timezone.now(), content="a later word", actor="luna")
    with events_store().cursor() as cursor:
        cursor.execute("SELECT content, context FROM lens_event_fts WHERE rowid = %s", [later.pk])
        assert cursor.fetchone() == ("a later word", f"{log[-1][1]} {log[-2][1]}")


def test_it_times_every_turn_and_asks_the_same_messages_however_they_are_batched(settings):
    settings.COMPANION_OFFLINE = True
    one_at_a_time = TurnRunner(fragments=50, seed=3)
    overheads = one_at_a_time.run(1) + one_at_a_time.run(1)
    assert len(overheads) == 2 and all(ms > 0 for ms in overheads)
    assert TurnRunner(fragments=50, seed=3).run(2) and one_at_a_time.done == 2
    asked = list(
        Event.objects.filter(actor="luna").order_by("pk").values_list("content", flat=True)
    )
    assert len(asked) == 4 and asked[:2] == asked[2:]


def test_it_writes_the_log_in_the_search_benchmarks_vocabulary():
    sqlite_only()
    synthetic_gem_build(
        events=400, fragments=30, edges=40, working_memory=20, active=5, progress=lambda _: None
    )
    names = {
        word
        for key, triggers in fragment_names(30)
        for name in (key, *triggers)
        for word in re.findall(r"[^\W_]+", name.casefold())
    }
    said = Counter(
        word
        for content in Event.objects.values_list("content", flat=True)
        for word in re.findall(r"[^\W_]+", re.sub(r"<[^>]+>", " ", content).casefold())
    )
    words = set(vocabulary(VOCABULARY_SEED))
    assert set(said) <= words | names
    # Zipf's law: many words, a few of them in most turns, most of them rare.
    assert len(set(said) & words) > 1_000
    common, _ = said.most_common(1)[0]
    assert common in vocabulary(VOCABULARY_SEED)[:60] and sum(said.values()) > 5_000


def test_its_fragments_have_keys_and_triggers_a_person_could_give_them():
    names = fragment_names(500)
    assert fragment_names(100) == names[:100]  # a smaller Gem's are a larger one's first
    keys = [key for key, _ in names]
    assert len({key.casefold() for key in keys}) == 500
    for key, triggers in names:
        KEY_VALIDATOR(key)
        assert triggers_problem(triggers) is None
    assert 60 < sum(1 for _, triggers in names if triggers) < 140
    assert 100 < sum(1 for key in keys if "-" in key) < 240
    assert not {key for key in keys} & set(vocabulary(VOCABULARY_SEED))


def test_about_one_message_in_five_names_a_fragment_by_its_key_or_a_trigger():
    names = fragment_names(300)
    index = names_index((key, [key, *triggers]) for key, triggers in names)
    said = Conversation(fragments=300, rng=random.Random(1))
    messages = [said.message() for _ in range(2_000)]
    found = [names_found(message, index) for message in messages]
    assert all(len(named) <= 1 for named in found)
    share = sum(1 for named in found if named) / len(messages)
    assert abs(share - NAMING_SHARE) < 0.03
    as_said = Counter()
    triggers = {trigger for _, fragment_triggers in names for trigger in fragment_triggers}
    for (named,) in filter(None, found):
        kind = "trigger" if named.said in triggers else "key"
        as_said[kind, named.said == named.key] += 1
    assert as_said["key", True] and as_said["key", False] and as_said["trigger", False]
    # A few fragments are talked about most.
    talked = Counter(named[0].key for named in found if named)
    assert talked.most_common(1)[0][1] > 10 * (sum(talked.values()) / len(names))


def test_a_turn_that_names_a_fragment_wakes_it(settings):
    sqlite_only()
    settings.COMPANION_OFFLINE = True
    synthetic_gem_build(
        events=200, fragments=40, edges=30, working_memory=20, active=5, progress=lambda _: None
    )
    TurnRunner(fragments=40, seed=2).run(15)
    keys = set(Fragment.objects.values_list("key", flat=True))
    woken = [
        name["key"]
        for snapshot in ContextSnapshot.objects.all()
        for name in snapshot.items_included["woken"]
    ]
    assert woken and set(woken) <= keys


def test_it_counts_the_passages_each_turn_found(settings):
    sqlite_only()
    settings.COMPANION_OFFLINE = True
    synthetic_gem_build(
        events=400, fragments=40, edges=30, working_memory=20, active=5, progress=lambda _: None
    )
    runner = TurnRunner(fragments=40, seed=2)
    runner.run(6)
    found = [
        len(snapshot.items_included["found"])
        for snapshot in ContextSnapshot.objects.order_by("turn")
    ]
    assert runner.found == found and any(found)


@given(st.lists(st.floats(0, 1_000), min_size=1, max_size=300))
def test_it_reports_the_median_the_95th_percentile_and_the_worst(overheads):
    figures = overhead_figures(overheads)
    ordered = sorted(overheads)
    assert figures["turns"] == len(overheads)
    assert figures["p50_ms"] == statistics.median(overheads)
    assert figures["p95_ms"] == ordered[int(0.95 * (len(ordered) - 1))]
    assert figures["max_ms"] == max(overheads)
    assert "found_share" not in figures


@given(st.lists(st.integers(0, 8), min_size=1, max_size=300))
def test_it_reports_the_share_of_turns_that_found_and_the_passages_on_average(found):
    figures = overhead_figures([1.0] * len(found), found)
    assert figures["found_share"] == sum(1 for count in found if count > 0) / len(found)
    assert figures["found_mean"] == pytest.approx(sum(found) / len(found))
