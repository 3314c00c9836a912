"""A turn's context read back in words (heart/inspect.py), from snapshots of real turns run
through the real SDK against the local fake Messages API."""

from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from bench.fakeapi import FakeReply
from events.models import Event, Turn
from gem.models import AmbientProse, Fragment, WorkingMemory
from gem.services import time_zone_set, working_memory_status_set
from heart import assemble, inspect
from heart.corrections import correction_make
from heart.inspect import entries_of, sections_of, snapshot_of, turn_inspection
from heart.models import ContextSnapshot
from heart.services import turn_submit
from heart.tasks import run_turns_task
from mirror.models import Summary

pytestmark = pytest.mark.django_db(databases="__all__")

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def owner_in_utc():
    time_zone_set(name="UTC")


def answered(fake_api, text: str, at: datetime, reply: str = "<say>mm</say>") -> Turn:
    """One whole turn of luna's at ``at``, answered by the fake API with ``reply``."""
    fake_api.push(FakeReply(reply))
    turn = turn_submit(text=text, actor="luna", at=at, enqueue=False)
    run_turns_task(turn.pk)
    turn.refresh_from_db()
    assert turn.status == "done", turn.error
    return turn


def reasons(inspection, section: str) -> dict[str, str]:
    return {item.label: item.reason for item in inspection.left_out if item.section == section}


def reason_for(inspection, section: str, start: str) -> str:
    found = [
        reason for label, reason in reasons(inspection, section).items() if label.startswith(start)
    ]
    assert len(found) == 1, (start, reasons(inspection, section))
    return found[0]


def item(type_: str, content: str, *, at: datetime, **fields) -> WorkingMemory:
    return WorkingMemory.objects.create(
        type=type_, content=content, turn=1, created_at=at, refreshed_at=at, **fields
    )


# --- Working memory -----------------------------------------------------------------------------


def test_a_faded_feeling_is_under_the_floor_with_its_score(fake_api):
    # 16 hours at a 2-hour half-life: 0.5 ** 8, about 0.0039.
    feeling = item("feeling", "restless", at=START - timedelta(hours=16))
    turn = answered(fake_api, "<luna>hello</luna>", START)
    inspection = turn_inspection(turn=turn)
    assert reason_for(inspection, "Lingering", f"#{feeling.pk} feeling") == (
        "under the 0.01 floor (score 0.0039)"
    )
    assert "restless" not in inspection.snapshot.assembled_user


def test_an_item_with_no_room_left_is_cut_at_its_rank_with_the_tokens_it_needed(fake_api, settings):
    settings.BUDGET_WORKING_MEMORY = 30
    pins = [
        item("pin", f"{word} " * 12, at=START - timedelta(minutes=n))
        for n, word in enumerate(["tea", "rain", "cats"])
    ]
    turn = answered(fake_api, "<luna>hello</luna>", START)
    inspection = turn_inspection(turn=turn)
    snapshot = inspection.snapshot
    left = {entry["id"]: entry for entry in snapshot.items_included["left_out"]["lingering"]}
    assert list(left) == [pins[1].pk, pins[2].pk]  # the newest fits, the older ones do not
    for pin in pins[1:]:
        entry = left[pin.pk]
        assert entry["tokens"] > entry["room"]
        assert reason_for(inspection, "Lingering", f"#{pin.pk} pin") == (
            f"cut by the budget at rank {entry['rank']} (needed {entry['tokens']} tokens, "
            f"{entry['room']} left)"
        )
    assert [shown.id for shown in inspection.lingering] == [pins[0].pk]
    lingering = next(bar for bar in inspection.bars if bar.name == "Lingering")
    assert lingering.budget == 30 and 0 < lingering.tokens <= 30


def test_items_cut_further_down_than_the_nearest_misses_are_counted(
    fake_api, settings, monkeypatch
):
    monkeypatch.setattr(assemble, "NEAR_MISSES", 1)
    settings.BUDGET_WORKING_MEMORY = 30
    for n, word in enumerate(["tea", "rain", "cats", "moss"]):
        item("pin", f"{word} " * 12, at=START - timedelta(minutes=n))
    turn = answered(fake_api, "<luna>hello</luna>", START)
    said = reasons(turn_inspection(turn=turn), "Lingering")
    assert said["and 2 more items"] == "cut by the budget, lower in the ranking than those above"
    assert sum(reason.startswith("cut by the budget at rank 2") for reason in said.values()) == 1


def test_a_plan_at_its_floor_left_out_is_submerged_until_two_days_before_it_is_due(
    fake_api, settings
):
    settings.BUDGET_WORKING_MEMORY = 20
    item("pin", "tea without sugar, always", at=START)
    plan = item(
        "plan",
        "renew the passport before the trip",
        at=START - timedelta(hours=6),
        due=datetime(2026, 3, 20, 17, 0, tzinfo=UTC),
    )
    turn = answered(fake_api, "<luna>hello</luna>", START)
    inspection = turn_inspection(turn=turn)
    entry = inspection.snapshot.items_included["left_out"]["lingering"][0]
    assert entry["id"] == plan.pk and entry["score"] == 0.08
    assert reason_for(inspection, "Lingering", f"#{plan.pk} plan") == (
        "submerged: a plan at its floor until 48 hours before it is due (it rises from "
        "Wednesday 18 March 2026, 5 pm); "
        f"cut by the budget at rank 2 (needed {entry['tokens']} tokens, {entry['room']} left)"
    )


def test_a_plan_cut_while_it_rises_is_not_said_to_be_submerged(fake_api, settings):
    settings.BUDGET_WORKING_MEMORY = 20
    item("pin", "tea without sugar, always", at=START)
    plan = item(
        "plan", "the passport", at=START - timedelta(days=5), due=START + timedelta(hours=40)
    )
    inspection = turn_inspection(turn=answered(fake_api, "<luna>hello</luna>", START))
    reason = reason_for(inspection, "Lingering", f"#{plan.pk} plan")
    assert reason.startswith("cut by the budget at rank 2")


def test_an_item_resolved_since_the_turn_before_is_not_active(fake_api):
    plan = item("plan", "call the pharmacy", at=START)
    pin = item("pin", "tea", at=START)
    first = answered(fake_api, "<luna>hello</luna>", START)
    assert plan.pk in snapshot_of(first.pk).items_included["lingering"]
    working_memory_status_set(
        item_ids=[plan.pk], status="resolved", reason="done", now=START + timedelta(minutes=5)
    )
    second = answered(fake_api, "<luna>done it</luna>", START + timedelta(minutes=10))
    inspection = turn_inspection(turn=second)
    assert reason_for(inspection, "Lingering", f"#{plan.pk} plan") == (
        "not active: resolved, Monday 2 March 2026, 9:05 am"
    )
    assert f"#{pin.pk} pin" not in "".join(reasons(inspection, "Lingering"))
    lingering = {change.name: change for change in inspection.changes}["Lingering"]
    assert lingering.status == "changed" and lingering.items == [f"went out: #{plan.pk}"]


def test_an_item_dropped_before_the_first_turn_is_named_as_not_active(fake_api):
    pin = item("pin", "the old flat", at=START - timedelta(days=2))
    working_memory_status_set(
        item_ids=[pin.pk], status="dropped", reason="moved", now=START - timedelta(hours=3)
    )
    long_gone = item("pin", "the older flat", at=START - timedelta(days=9))
    working_memory_status_set(
        item_ids=[long_gone.pk], status="dropped", reason="moved", now=START - timedelta(days=3)
    )
    inspection = turn_inspection(turn=answered(fake_api, "<luna>hello</luna>", START))
    assert reason_for(inspection, "Lingering", f"#{pin.pk} pin").startswith("not active: dropped")
    assert not [label for label in reasons(inspection, "Lingering") if f"#{long_gone.pk} " in label]


# --- Summaries and Recent -------------------------------------------------------------------------


def summarised_log(settings, fake_api, *, coarse=True):
    """Forty events of ten tokens each before luna's message, Recent holding the newest ten;
    summaries: L0 of events 1-20 and 21-28, the L1 of 1-28 over them, an L0 starting inside
    the window, and an L0 the L1 superseded (without ``coarse``, only the L0 of 1-20 and 21-28);
    nothing covers events 29 and 30."""
    settings.BUDGET_POOL_USER = 105
    settings.BUDGET_POOL_SAY = settings.BUDGET_POOL_DO = settings.BUDGET_POOL_FLEX = 0
    events = [
        Event.objects.create(
            ts=START + timedelta(minutes=n),
            actor="luna",
            content=f"<luna>{n:03d} {'a' * 28}</luna>",
        )
        for n in range(1, 41)
    ]
    pk = {n: event.pk for n, event in enumerate(events, start=1)}

    def summary(level, first, last, **fields):
        return Summary.objects.create(
            level=level,
            first_event_id=pk[first],
            last_event_id=pk[last],
            content=f"{level} of {first}-{last}.",
            **fields,
        )

    made = {"1-20": summary("L0", 1, 20), "21-28": summary("L0", 21, 28)}
    if coarse:
        made |= {
            "old": summary("L0", 1, 10),
            "L1": summary("L1", 1, 28),
            "inside": summary("L0", 32, 40),
        }
        Summary.objects.filter(pk=made["old"].pk).update(superseded_by=made["L1"])
    turn = answered(fake_api, "<luna>and now?</luna>", START + timedelta(hours=1))
    return turn, events, made


def test_summaries_not_behind_recent_say_why(fake_api, settings):
    turn, events, made = summarised_log(settings, fake_api)
    inspection = turn_inspection(turn=turn)
    window_first = inspection.recent.window_first
    assert window_first == events[30].pk  # the newest ten of forty
    assert [shown.id for shown in inspection.summaries] == [made["1-20"].pk, made["21-28"].pk]
    said = reasons(inspection, "Summaries")
    inside = made["inside"]
    assert said[f"#{inside.pk} L0, events {inside.first_event_id}–{inside.last_event_id}"] == (
        f"summary overlapping Recent: it starts at event {inside.first_event_id}, inside the "
        f"window (from event {window_first})"
    )
    l1 = made["L1"]
    assert said[f"#{l1.pk} L1, events {l1.first_event_id}–{l1.last_event_id}"] == (
        f"its events are shown finer, by summaries #{made['1-20'].pk}, #{made['21-28'].pk}"
    )
    old = made["old"]
    assert said[f"#{old.pk} L0, events {old.first_event_id}–{old.last_event_id}"] == (
        f"superseded by summary #{l1.pk}"
    )


def test_the_events_before_recent_are_counted_with_what_covers_them(fake_api, settings):
    turn, events, _made = summarised_log(settings, fake_api)
    inspection = turn_inspection(turn=turn)
    first, window_first = events[0].pk, inspection.recent.window_first
    assert inspection.unsummarised == (events[28].pk, window_first - 1)
    assert inspection.outside_recent == (
        f"30 events before the window (events {first}–{window_first - 1}); "
        f"the summaries shown cover events {first}–{events[27].pk}; events {events[28].pk}–"
        f"{window_first - 1} are not summarised yet, and the context says so."
    )
    recent = inspection.recent
    assert (recent.first_event_id, recent.last_event_id) == (window_first, events[-1].pk)
    assert recent.events == 10 and recent.pools == {"user": 10, "say": 0, "do": 0}


def test_a_long_list_of_summaries_of_one_kind_is_cut_and_counted(fake_api, settings, monkeypatch):
    monkeypatch.setattr(inspect, "LISTED_AT_MOST", 1)
    _turn, events, _made = summarised_log(settings, fake_api)
    older = Summary.objects.create(
        level="L0", first_event_id=events[10].pk, last_event_id=events[19].pk, content="…"
    )
    # Merged since into a coarser summary written after it, as the Mirror merges.
    merged = Summary.objects.create(
        level="L1", first_event_id=events[10].pk, last_event_id=events[19].pk, content="…"
    )
    Summary.objects.filter(pk=older.pk).update(superseded_by=merged)
    turn = answered(fake_api, "<luna>still there?</luna>", START + timedelta(hours=2))
    said = reasons(turn_inspection(turn=turn), "Summaries")
    superseded = [label for label, reason in said.items() if reason.startswith("superseded by")]
    assert superseded == [f"#{older.pk} L0, events {older.first_event_id}–{older.last_event_id}"]
    assert said["and 1 older summary"] == "superseded, as those above"


def test_summaries_a_small_budget_leaves_behind_say_so(fake_api, settings):
    settings.BUDGET_SUMMARIES = 30
    turn, _events, made = summarised_log(settings, fake_api)
    inspection = turn_inspection(turn=turn)
    l1 = made["L1"]
    assert [shown.id for shown in inspection.summaries] == [l1.pk]  # the two L0 do not fit
    said = reasons(inspection, "Summaries")
    for name in ("1-20", "21-28"):
        row = made[name]
        label = f"#{row.pk} L0, events {row.first_event_id}–{row.last_event_id}"
        assert said[label] == f"covered by summary #{l1.pk}, shown instead"


def test_summaries_further_back_than_the_budget_reaches_say_so(fake_api, settings):
    settings.BUDGET_SUMMARIES = 30
    turn, _events, made = summarised_log(settings, fake_api, coarse=False)
    inspection = turn_inspection(turn=turn)
    newest = made["21-28"]
    assert [shown.id for shown in inspection.summaries] == [newest.pk]
    said = reasons(inspection, "Summaries")
    older = made["1-20"]
    label = f"#{older.pk} L0, events {older.first_event_id}–{older.last_event_id}"
    assert said[label] == "further back than the Summaries budget reached"


def test_a_summary_the_assembler_cut_is_named_with_its_rank(fake_api, settings):
    turn, _events, made = summarised_log(settings, fake_api)
    snapshot = snapshot_of(turn.pk)
    snapshot.items_included["left_out"]["summaries"] = [
        {"id": made["1-20"].pk, "reason": "budget", "rank": 2}
    ]
    snapshot.save(update_fields=["items_included"])
    row = made["1-20"]
    label = f"#{row.pk} L0, events {row.first_event_id}–{row.last_event_id}"
    assert reasons(turn_inspection(turn=turn), "Summaries")[label] == (
        "cut by the budget at rank 2: the summaries reach back from Recent without gaps and stop "
        "at the first that does not fit"
    )


# --- Recalled -------------------------------------------------------------------------------------


def test_a_recalled_fragment_with_no_room_left_is_cut_at_its_rank(fake_api, settings):
    settings.BUDGET_RECALL = 60
    Fragment.objects.create(key="fairy", ambient="White softness.", inventory="A grey crewneck.")
    # Small enough for the whole section, too big for what fairy leaves of it.
    Fragment.objects.create(key="well", ambient="Deep and cold.", inventory="Stone. " * 26)
    answered(
        fake_api,
        "<luna>what should I wear?</luna>",
        START,
        "<say>hm</say> recall(fairy) recall(well)",
    )
    turn = answered(fake_api, "<luna>and?</luna>", START + timedelta(minutes=1))
    inspection = turn_inspection(turn=turn)
    assert [(shown.key, shown.tier) for shown in inspection.recalled] == [("fairy", "inventory")]
    assert inspection.recalled[0].text == "A grey crewneck."
    assert inspection.recalled[0].link == ("fragment", "fairy")
    entry = inspection.snapshot.items_included["left_out"]["recalled"][0]
    assert reasons(inspection, "Recalled") == {
        "well (inventory)": f"cut by the budget at rank 2 (needed {entry['tokens']} tokens, "
        f"{entry['room']} left)"
    }


def test_a_fragment_the_ambient_prose_names_and_nobody_recalled_is_not_recalled(fake_api):
    Fragment.objects.create(key="fairy", ambient="White softness.")
    Fragment.objects.create(key="well", ambient="Deep and cold.")
    AmbientProse.objects.create(content="Her [fairy] sweater; the [well] out back; [nowhere].")
    answered(fake_api, "<luna>hello</luna>", START, "<say>hm</say> recall(fairy)")
    turn = answered(fake_api, "<luna>and the bucket?</luna>", START + timedelta(minutes=1))
    said = reasons(turn_inspection(turn=turn), "Recalled")
    assert said == {
        "well": "not recalled: the ambient prose names it, the message named neither its key "
        "nor a trigger, and the reply before asked for no recall(…) or search(…) that reached it"
    }  # fairy was recalled; [nowhere] names no fragment


# --- The cache, the turn before, what an old snapshot lacks ---------------------------------------


def test_the_cache_says_what_the_turn_read_and_wrote_and_which_prefixes_are_too_short(
    fake_api, settings
):
    settings.CACHE_MINIMUM_TOKENS = {"claude-opus-5-5": 100_000}
    fake_api.push(
        FakeReply(
            "<say>hi</say>",
            input_tokens=100,
            cache_read_input_tokens=300,
            cache_creation_input_tokens=600,
        )
    )
    turn = turn_submit(text="<luna>hello</luna>", actor="luna", at=START, enqueue=False)
    run_turns_task(turn.pk)
    turn.refresh_from_db()
    inspection = turn_inspection(turn=turn)
    cache = inspection.cache
    assert (cache.read, cache.written, cache.uncached) == (300, 600, 100)
    assert cache.read_percent == 30 and cache.minimum == 100_000
    assert inspection.breakpoints, "the system prompt closes a prefix"
    whole = next(bp for bp in inspection.breakpoints if bp.where == "the whole system prompt")
    assert whole.ttl == "1h" and not whole.cached
    assert whole.sentence == "under the model's minimum of 100,000: not cached"
    settings.CACHE_MINIMUM_TOKENS = {"claude-opus-5-5": 1}
    whole = next(bp for bp in turn_inspection(turn=turn).breakpoints if bp.part == "system")
    assert whole.cached and whole.sentence.startswith("cached for 1 hour")


def test_it_compares_each_section_with_the_turn_before(fake_api):
    first = answered(fake_api, "<luna>hello</luna>", START)
    second = answered(
        fake_api, "<luna><pin>tea at five</pin> and you?</luna>", START + timedelta(minutes=3)
    )
    inspection = turn_inspection(turn=second)
    assert inspection.previous_turn == first and inspection.next_turn is None
    assert turn_inspection(turn=first).next_turn == second
    assert inspection.previous_snapshot.turn == first.pk
    changes = {change.name: change for change in inspection.changes}
    pin = WorkingMemory.objects.get(type="pin")
    assert changes["Lingering"].status == "added"
    assert changes["Lingering"].items == [f"came in: #{pin.pk}"]
    assert changes["Recent"].status == "added"
    assert changes["Recent"].items == ["2 events came in at the end"]
    assert changes["System"].status == "same" and changes["Message"].status == "changed"
    assert [change.name for change in inspection.changed] == [
        "Lingering",
        "Recent",
        "Now",
        "Message",
    ]


def test_an_old_snapshot_shows_what_it_has_and_says_what_it_lacks(fake_api):
    turn = answered(fake_api, "<luna>hello</luna>", START)
    ContextSnapshot.objects.filter(turn=turn.pk).update(
        items_included={"lingering": [], "dropped": {"lingering": 2, "lingering_faded": 1}},
        inputs={},
    )
    inspection = turn_inspection(turn=turn)
    assert inspection.missing == [
        "why each item was left out (only how many were)",
        "the scores of the working memory included",
        "where the prompt cache's breakpoints were",
        "where the Recent window started and whether it moved",
        "the inputs (the moment it was assembled, the turn counter, the pending recall)",
    ]
    assert reasons(inspection, "Lingering") == {
        "2 working-memory items": "left out (no reason was kept)",
        "1 working-memory item": "under the 0.01 floor",
    }
    assert inspection.breakpoints == [] and inspection.recent is None


def test_a_turn_without_a_snapshot_says_why(fake_api):
    queued = turn_submit(text="<luna>hello</luna>", actor="luna", at=START, enqueue=False)
    inspection = turn_inspection(turn=queued)
    assert inspection.snapshot is None
    assert inspection.absent.startswith("This turn has not been answered yet")
    Turn.objects.filter(pk=queued.pk).update(status="error", error="overloaded")
    queued.refresh_from_db()
    assert turn_inspection(turn=queued).absent.startswith("This turn failed")


def test_a_message_that_writes_a_heading_stays_in_the_message():
    user = "## Recent\nluna: hi\n\n## Now\nIt is noon.\n\n## Message\nluna:\n## Recent\nmine"
    sections = sections_of(user)
    assert sections["Recent"] == "## Recent\nluna: hi"
    assert sections["Message"] == "## Message\nluna:\n## Recent\nmine"
    assert entries_of(
        "## Recalled\n### fairy (ambient)\nWhite.\n\nSoft.\n\n### well (ambient)"
    ) == [
        ("fairy (ambient)", "White.\n\nSoft."),
        ("well (ambient)", ""),
    ]


# --- manage.py inspect ---------------------------------------------------------------------------


def test_the_command_prints_sections_included_left_out_and_cache(fake_api, settings, capsys):
    settings.BUDGET_WORKING_MEMORY = 20
    item("pin", "tea without sugar, always", at=START)
    feeling = item("feeling", "restless", at=START - timedelta(hours=16))
    turn = answered(fake_api, "<luna>hello</luna>", START)
    call_command("inspect", str(turn.pk))
    out = capsys.readouterr().out
    record = f" (record {turn.pk})" if turn.pk != turn.number else ""
    assert f"Turn {turn.number}{record}, done" in out
    assert "Lingering" in out and "/ 20 tokens" in out
    assert "[pin] tea without sugar, always" in out
    assert f"#{feeling.pk} feeling — restless: under the 0.01 floor (score 0.0039)" in out
    assert "Cache" in out and "the whole system prompt" in out
    assert "## Message" not in out
    call_command("inspect", str(turn.pk), "--text")
    assert "## Message\nluna:\n<luna>hello</luna>" in capsys.readouterr().out


def test_the_command_refuses_a_turn_that_is_not_there():
    with pytest.raises(CommandError, match="No turn 404"):
        call_command("inspect", "404")


def test_it_lists_the_corrections_of_the_turns_conversation_before_it_and_since(fake_api):
    now = timezone.now()
    first = answered(fake_api, "<luna>the code is 4471</luna>", now)
    correction_make(event_id=first.event_id, kind="retraction", made_by="owner")
    later = answered(fake_api, "<luna>what code?</luna>", now + timedelta(minutes=2))

    [before] = turn_inspection(turn=later).corrections
    [since] = turn_inspection(turn=first).corrections

    assert (before.event_id, before.kind, before.since) == (first.event_id, "retraction", False)
    assert before.sentence.startswith("taken back by owner, ")
    assert before.sentence.endswith("before this turn: the context read it as corrected.")
    assert since.since and "what was sent holds the message as it stood then" in since.sentence
