"""The context of a turn: the same from the process's copy of the Gem as from a fresh read."""

import itertools
import math
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connections
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from bench.fakeapi import FakeReply
from events.models import Correction, Event
from gem.models import AmbientProse, Fragment, FragmentEdge, WakeText, WorkingMemory
from gem.selectors import gem_copy, gem_current
from gem.services import time_zone_set, working_memory_sweep
from gem.state import RECENT_WINDOW, state_get
from heart import context
from heart.context import context_for_event
from heart.inspect import turn_inspection
from heart.services import turn_claim_next, turn_run, turn_submit
from heart.tasks import run_turns_task
from mirror.models import Summary

pytestmark = pytest.mark.django_db(databases="__all__")

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def turn(text: str, at: datetime):
    """One whole turn with the offline companion, which keeps the process's copy warm."""
    submitted = turn_submit(text=text, actor="luna", at=at, enqueue=False)
    claimed = turn_claim_next()
    assert claimed is not None and claimed.pk == submitted.pk
    done = turn_run(turn=claimed)
    assert done.status == "done", done.error
    return done


def contexts_kept_and_fresh(done, at: datetime):
    """The context of the turn's event from the warm copy, then from a cleared one."""
    kept = context_for_event(event=done.event, now=at, current_turn=done.number, gem=gem_current())
    gem_copy.clear()
    fresh = context_for_event(event=done.event, now=at, current_turn=done.number, gem=gem_current())
    return kept, fresh


def assert_same(kept, fresh):
    assert kept.system_text == fresh.system_text
    assert kept.user_text == fresh.user_text
    assert kept.items_included == fresh.items_included
    assert kept.token_counts == fresh.token_counts


def test_it_builds_the_same_context_from_the_copy_after_every_kind_of_change():
    at = START
    turn("<luna><plan>call the pharmacy friday at 5pm</plan> hello</luna>", at)
    turn("<luna><pin>tea without sugar</pin> and the rain</luna>", at := at + timedelta(hours=1))
    gem_current()  # warm
    # Changes the copy must see: the sweep, edits outside the turn, new texts.
    WorkingMemory.objects.create(
        type="feeling", content="restless", turn=1, refreshed_at=at - timedelta(days=5)
    )
    working_memory_sweep(now=at, current_turn=2)
    WorkingMemory.objects.filter(type="pin").update(content="tea with honey")
    AmbientProse.objects.create(content="Luna's quiet [evenings].")
    WakeText.objects.create(kind="wake", content="Wake up gently.")
    done = turn("<luna>what do you remember?</luna>", at := at + timedelta(hours=2))
    kept, fresh = contexts_kept_and_fresh(done, at)
    assert_same(kept, fresh)
    assert "tea with honey" in kept.user_text and "restless" not in kept.user_text
    assert kept.system_text.startswith("Wake up gently.")
    assert "Luna's quiet [evenings]." in kept.system_text


def test_it_builds_the_same_context_turn_after_turn():
    at = START
    for n in range(6):
        at += timedelta(minutes=40)
        done = turn(f"<luna><pin>thing {n % 3}</pin> message {n}</luna>", at)
        kept, fresh = contexts_kept_and_fresh(done, at)
        assert_same(kept, fresh)
        assert f"thing {n % 3}" in kept.user_text


@pytest.mark.parametrize("pages_at_once", [1, 2, 3, 7])
def test_it_takes_the_same_recent_events_however_many_pages_it_reads_at_once(
    pages_at_once, monkeypatch
):
    at = START
    for n in range(450):  # event texts of uneven lengths: the page where it stops varies
        Event.objects.create(ts=at + timedelta(minutes=n), content="x" * (n % 37 + 1))
    newest = Event.objects.order_by("-pk").first().pk + 1
    for wanted in (10, 3_000, 7_000, 100_000):
        monkeypatch.setitem(context._recent_pages_last, "pages", 1)
        one_at_a_time = context._recent_events(before=newest, chars_wanted=wanted)
        monkeypatch.setitem(context._recent_pages_last, "pages", pages_at_once)
        with CaptureQueriesContext(connections["events"]) as queries:
            assert context._recent_events(before=newest, chars_wanted=wanted) == one_at_a_time
        pages = math.ceil(len(one_at_a_time) / context.RECENT_PAGE)
        # The first query reads ``pages_at_once`` pages, later ones a page each, one more
        # finds nothing when the log runs out, and one reads the corrections of what was read.
        assert len(queries) <= 1 + max(0, pages - pages_at_once) + 1 + 1
    assert one_at_a_time[-1][0] == newest - 1 and len(one_at_a_time) == 450
    assert context._recent_pages_last["pages"] == 5  # the next read takes them all at once


def test_recent_shows_a_persons_adjacent_tags_apart_and_their_line_breaks():
    done = turn(
        "<luna><plan>exercise routine</plan><plan>weekly review on sundays</plan>"
        "<pin>sugars in tea</pin>\nand a second line</luna>",
        START,
    )
    later = turn("<luna>what did I ask?</luna>", START + timedelta(minutes=5))
    recent = context_for_event(
        event=later.event, now=START, current_turn=later.number, gem=gem_current()
    ).user_text
    assert "exercise routine weekly review on sundays sugars in tea" in recent
    assert "routineweekly" not in recent and "sundaysugars" not in recent
    assert "sugars in tea\n" in recent and "and a second line" in recent
    assert done.event.content.count("<plan>") == 2  # the log keeps the message as written


def summarised_log(settings, *, recent_events: int) -> tuple[list[Event], dict[str, Summary]]:
    """A hundred events of ten tokens each, then a message; pools that hold the newest
    ``recent_events`` of them; L0 of events 1-40, 41-80 and 81-92 and their L1."""
    settings.BUDGET_POOL_USER = recent_events * 10 + 5
    settings.BUDGET_POOL_SAY = settings.BUDGET_POOL_DO = settings.BUDGET_POOL_FLEX = 0
    events = [
        Event.objects.create(
            ts=START + timedelta(minutes=n),
            actor="luna",
            content=f"<luna>{n:03d} {'a' * 28}</luna>",
        )
        for n in range(1, 102)
    ]
    pk = {n: event.pk for n, event in enumerate(events, start=1)}
    summaries = {
        name: Summary.objects.create(
            level=level, first_event_id=pk[first], last_event_id=pk[last], content=content
        )
        for name, level, first, last, content in [
            ("1-40", "L0", 1, 40, "The garden, " * 73),  # about 225 tokens each
            ("41-80", "L0", 41, 80, "The rain, " * 88),
            ("81-92", "L0", 81, 92, "Tea. " * 70),
            ("L1", "L1", 1, 92, "Garden, rain and tea. " * 45),
        ]
    }
    return events, summaries


@pytest.mark.parametrize("first_in_recent", [61, 71, 81])
def test_it_shows_the_l0_behind_recent_rather_than_an_l1_reaching_into_it(
    first_in_recent, settings
):
    events, summaries = summarised_log(settings, recent_events=101 - first_in_recent)
    message = events[-1]
    assembly = context_for_event(event=message, now=START, current_turn=1, gem=gem_current())
    assert min(assembly.items_included["recent"]["user"]) == events[first_in_recent - 1].pk
    # 41-80 shares turns with Recent, but nothing finer covers the time before it.
    shown = [summaries["1-40"].pk, summaries["41-80"].pk]
    assert assembly.items_included["summaries"] == shown
    assert assembly.token_counts["summaries"] <= settings.BUDGET_SUMMARIES


@pytest.mark.parametrize(("budget", "shown"), [(800, ["1-40", "41-80", "81-92"]), (400, ["L1"])])
def test_it_shows_an_l1_for_time_behind_recent_only_when_its_l0_do_not_fit(budget, shown, settings):
    settings.BUDGET_SUMMARIES = budget
    events, summaries = summarised_log(settings, recent_events=8)
    message = events[-1]
    assembly = context_for_event(event=message, now=START, current_turn=1, gem=gem_current())
    assert min(assembly.items_included["recent"]["user"]) == events[93 - 1].pk
    assert assembly.items_included["summaries"] == [summaries[name].pk for name in shown]
    assert assembly.token_counts["summaries"] <= budget


LONG_MESSAGE = (
    "I walked the long way home past the canal again because the bus was late and the light "
    "on the water was too good to miss, and then I stood at the bakery for ages deciding "
    "between the seeded loaf and the rye, which is silly, but it was the best part of the day. "
)  # about 60 words


def long_messages_short_replies(count: int) -> list[Event]:
    """A conversation of the person's long messages and the companion's two-word replies, a
    message and its reply a turn, written into the log; the last event is a new message."""
    events = []
    for n in range(count):
        at = START + timedelta(minutes=3 * n)
        events.append(Event.objects.create(ts=at, actor="luna", content=f"{LONG_MESSAGE}{n}"))
        reply = "<say>Go on.</say>"
        events.append(Event.objects.create(ts=at, actor="claude", content=reply))
    events.append(Event.objects.create(ts=START + timedelta(days=1), actor="luna", content="hi"))
    return events


def test_recent_is_one_window_of_whole_turns_with_short_replies_and_long_messages():
    events = long_messages_short_replies(120)
    assembly = context_for_event(event=events[-1], now=START, current_turn=1, gem=gem_current())
    recent = assembly.items_included["recent"]
    # The oldest message shown and the oldest reply shown are the same turn: no reply whose
    # message is gone (the replies' pool alone would have reached back to the first turns).
    assert min(recent["say"]) == min(recent["user"]) + 1
    assert assembly.items_included["recent_window"]["first_event"] == min(recent["user"])
    shown = set(recent["user"]) | set(recent["say"])
    assert shown == set(range(min(shown), events[-2].pk + 1))
    assert assembly.token_counts["recent"] <= 5000


def test_the_summaries_behind_the_window_are_its_l1_and_l2_reaching_back(settings):
    """The log of the report: L0, L1 and L2 covering events 1-384 while Recent, full of long
    messages, starts near event 200: the summaries stand right behind the window and reach
    back coarser, never the L0 of the log's first turns alone."""
    settings.BUDGET_POOL_USER, settings.BUDGET_POOL_SAY = 1500, 1500
    settings.BUDGET_POOL_DO, settings.BUDGET_POOL_FLEX = 1000, 1000
    events = long_messages_short_replies(240)
    pk = [event.pk for event in events]

    def summary(level, first, last, words):
        return Summary.objects.create(
            level=level,
            first_event_id=pk[first - 1],
            last_event_id=pk[last - 1],
            content=" ".join(["said"] * words),
        )

    made = [summary("L0", n * 16 + 1, (n + 1) * 16, 170) for n in range(24)]  # about 225 tokens
    made += [summary("L1", n * 48 + 1, (n + 1) * 48, 190) for n in range(8)]
    made += [summary("L2", n * 144 + 1, (n + 1) * 144, 230) for n in range(2)]
    assembly = context_for_event(event=events[-1], now=START, current_turn=1, gem=gem_current())
    window_first = assembly.items_included["recent_window"]["first_event"]
    level = {s.pk: s.level for s in made}
    spans = {s.pk: (s.first_event_id, s.last_event_id) for s in made}
    shown = assembly.items_included["summaries"]  # oldest first
    assert {level[i] for i in shown} & {"L1", "L2"}
    # Back to back, the newest reaching Recent: no hole between the summaries and the window.
    assert spans[shown[-1]][0] < window_first <= spans[shown[-1]][1] + 1
    for older, newer in itertools.pairwise(shown):
        assert spans[older][1] + 1 == spans[newer][0]
    assert spans[shown[0]][0] < window_first - 150  # far further back than three L0 reach
    assert assembly.items_included["unsummarised"] is None
    assert assembly.token_counts["summaries"] <= settings.BUDGET_SUMMARIES


def test_events_no_summary_covers_yet_are_named_rather_than_left_out(settings):
    """While the Mirror holds (or has not run), the turns between the newest summary and the
    window are named in the Summaries section."""
    events = long_messages_short_replies(90)
    summary = Summary.objects.create(
        level="L0",
        first_event_id=events[0].pk,
        last_event_id=events[39].pk,
        content="They talked about the canal and the bakery.",
    )
    assembly = context_for_event(event=events[-1], now=START, current_turn=1, gem=gem_current())
    window_first = assembly.items_included["recent_window"]["first_event"]
    assert window_first > events[40].pk
    hole = [events[40].pk, window_first - 1]
    assert assembly.items_included["unsummarised"] == hole
    assert f"### Not summarised yet, events {hole[0]}-{hole[1]}" in assembly.user_text
    assert assembly.items_included["summaries"] == [summary.pk]
    # The line comes last, after the summary it follows.
    assert assembly.user_text.index("They talked about") < assembly.user_text.index("### Not")
    assert assembly.token_counts["summaries"] <= settings.BUDGET_SUMMARIES

    # With no summary at all, the line starts at the log's first event.
    Summary.objects.all().delete()
    assembly = context_for_event(event=events[-1], now=START, current_turn=1, gem=gem_current())
    assert assembly.items_included["unsummarised"] == [events[0].pk, window_first - 1]


def test_a_summary_written_before_a_correction_of_what_it_covers_is_withheld():
    events = long_messages_short_replies(90)
    summary = Summary.objects.create(
        level="L0",
        first_event_id=events[0].pk,
        last_event_id=events[39].pk,
        content="They talked about the canal and the bakery.",
    )
    Correction.objects.create(event_id=events[3].pk, sequence=0, kind="retraction", made_by="owner")

    assembly = context_for_event(event=events[-1], now=START, current_turn=1, gem=gem_current())

    assert "the canal and the bakery" not in assembly.user_text
    assert assembly.items_included["summaries"] == []
    assert assembly.items_included["unsummarised"][0] == events[0].pk
    # Written again after the correction, it stands.
    Summary.objects.filter(pk=summary.pk).update(created_at=timezone.now() + timedelta(seconds=1))
    assembly = context_for_event(event=events[-1], now=START, current_turn=1, gem=gem_current())
    assert assembly.items_included["summaries"] == [summary.pk]


def test_the_turn_records_its_window_for_the_mirror():
    done = turn("hello there", START)
    assert state_get(RECENT_WINDOW) == {"first_event": None, "full": False}
    turn("and again", START + timedelta(minutes=1))
    assert state_get(RECENT_WINDOW) == {"first_event": done.event_id, "full": False}


def test_it_tells_the_time_in_the_owners_time_zone(settings):
    settings.TIME_ZONE = "UTC"
    time_zone_set(name="Asia/Tokyo")
    done = turn("<luna>good evening</luna>", START)  # 09:00 UTC is 18:00 in Tokyo
    kept, _ = contexts_kept_and_fresh(done, START)
    assert "It is Monday 2 March 2026, 6:00 in the evening." in kept.user_text


# --- what the message names wakes in the same turn, through the real SDK ----------------------


def sent_user_text(fake_api) -> str:
    return "".join(block["text"] for block in fake_api.requests[-1]["messages"][0]["content"])


def answered(fake_api, text: str, at: datetime):
    fake_api.push(FakeReply("<say>mm</say>"))
    submitted = turn_submit(text=text, actor="luna", at=at, enqueue=False)
    run_turns_task(submitted.pk)
    submitted.refresh_from_db()
    assert submitted.status == "done", submitted.error
    return submitted


@pytest.fixture
def lore():
    Fragment.objects.create(key="biscuit", recognition="The ginger cat who sleeps on the stove.")
    Fragment.objects.create(
        key="lighthouse",
        recognition="The white tower at the point; its lamp was put out in 1990.",
        triggers=["Old Grey the seal", "the point"],
    )
    Fragment.objects.create(key="keeper", ambient="Mr Tarrant kept the light for thirty years.")
    Fragment.objects.create(key="garden", recognition="Marigolds along the south wall.")
    FragmentEdge.objects.create(source_id="lighthouse", target_id="keeper")


def test_a_key_named_in_any_case_wakes_its_fragment_in_the_same_turn(fake_api, lore):
    turn = answered(fake_api, "<luna>what do you remember about BISCUIT?</luna>", START)

    sent = sent_user_text(fake_api)
    assert (
        "## Recalled\n### biscuit (recognition, woken by “BISCUIT” in the message)\n"
        "The ginger cat who sleeps on the stove."
    ) in sent
    assert "Marigolds" not in sent and "lighthouse" not in sent  # nothing unnamed woke
    inspection = turn_inspection(turn=turn)
    assert [(shown.key, shown.why) for shown in inspection.recalled] == [
        ("biscuit", "woken by “BISCUIT” in the message")
    ]
    assert inspection.woken == [{"key": "biscuit", "said": "BISCUIT"}]


def test_a_trigger_wakes_its_fragment_and_its_neighbour_at_ambient_depth(fake_api, lore):
    answered(fake_api, "<luna>Old Grey the seal was on the rocks</luna>", START)

    sent = sent_user_text(fake_api)
    assert "### lighthouse (recognition, woken by “Old Grey the seal” in the message)" in sent
    assert "### keeper (ambient, next to a fragment the message names)" in sent
    assert "biscuit" not in sent


def test_a_woken_fragment_keeps_within_the_recall_budget(fake_api, lore, settings):
    settings.BUDGET_RECALL = 30
    turn = answered(fake_api, "<luna>biscuit was at the lighthouse</luna>", START)

    sent = sent_user_text(fake_api)
    recalled = sent.split("## Recalled\n", 1)[1].split("\n\n## ", 1)[0]
    assert math.ceil(len("## Recalled\n" + recalled) / 4) <= 30
    left = turn_inspection(turn=turn).left_out
    assert any(item.section == "Recalled" and "woken by" in item.label for item in left)


def test_a_fragment_the_companion_asked_for_is_not_shown_twice_when_also_named(fake_api, lore):
    fake_api.push(FakeReply("<say>mm</say> recall(biscuit)"))
    first = turn_submit(text="<luna>hello</luna>", actor="luna", at=START, enqueue=False)
    run_turns_task(first.pk)
    answered(fake_api, "<luna>and biscuit?</luna>", START + timedelta(minutes=1))

    sent = sent_user_text(fake_api)
    assert sent.count("### biscuit (") == 1
    assert "### biscuit (recognition, woken by “biscuit” in the message)" in sent


def test_a_fragment_is_woken_by_the_persons_words_not_by_the_tags_around_them(fake_api, lore):
    Fragment.objects.create(key="luna", recognition="Luna, who speaks first in the mornings.")

    answered(fake_api, "<luna>good morning</luna>", START)
    assert "### luna (" not in sent_user_text(fake_api)

    answered(fake_api, "<luna>luna here, good morning</luna>", START + timedelta(minutes=1))
    assert "### luna (recognition, woken by “luna” in the message)" in sent_user_text(fake_api)
