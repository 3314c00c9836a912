from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from events.models import EventTag
from gem.models import Fragment, IngestRecord, WorkingMemory
from heart.ingest import COMPANION, USER, event_record, working_memory_ingest

pytestmark = pytest.mark.django_db(databases="__all__")

T0 = datetime(2026, 11, 23, 18, 0, tzinfo=ZoneInfo("UTC"))
HOUR = timedelta(hours=1)


def say(text, *, actor="claude", side=COMPANION, at=T0, turn=1):
    event, parsed = event_record(text=text, actor=actor, ts=at)
    result = working_memory_ingest(parsed=parsed, event=event, side=side, turn=turn)
    return event, result


def active(type_):
    return list(
        WorkingMemory.objects.filter(type=type_, status="active").values_list("content", flat=True)
    )


def test_it_logs_the_event_and_its_tags_before_memory():
    event, _ = say("<claude><say>hi</say><thought>she seems tired</thought></claude>")
    assert event.content == "<claude><say>hi</say><thought>she seems tired</thought></claude>"
    assert set(EventTag.objects.filter(event=event).values_list("tag", flat=True)) == {
        "claude",
        "say",
        "thought",
    }
    assert active("thought") == ["she seems tired"]


def test_it_lets_each_side_create_only_its_own_types():
    _, result = say("<pin>tea without sugar</pin><feeling>proud</feeling>", side=COMPANION)
    assert active("pin") == []
    assert active("feeling") == ["proud"]
    assert any("does not create pin" in reason for reason in result.ignored)
    say("<luna><pin>tea without sugar</pin><thought>x</thought></luna>", actor="luna", side=USER)
    assert active("pin") == ["tea without sugar"]
    assert active("thought") == []


def test_it_keeps_one_feeling_capped_at_fifteen_words():
    say("<feeling>a little restless</feeling>")
    long = " ".join(f"w{i}" for i in range(20))
    event, _ = say(f"<feeling>{long}</feeling>", at=T0 + timedelta(minutes=5))
    assert active("feeling") == [" ".join(f"w{i}" for i in range(15))]
    assert long in event.content
    assert WorkingMemory.objects.filter(type="feeling", status="superseded").count() == 1


def test_it_supersedes_a_desc_of_the_same_subject_only():
    say("<desc>hasuki: grey crewneck, soft</desc><desc>room: fairy lights</desc>")
    say("<desc>Hasuki: knitted overcoat</desc>", at=T0 + timedelta(hours=1))
    assert sorted(active("desc")) == ["fairy lights", "knitted overcoat"]


def test_it_ignores_a_desc_with_a_subject_and_nothing_to_keep():
    event, result = say("<say>hm</say><desc>luna:</desc><thought>she is quiet</thought>")
    assert result.ignored == ["desc: A working-memory item needs some content."]
    assert active("desc") == [] and active("thought") == ["she is quiet"]
    assert EventTag.objects.filter(event_id=event.pk, tag="desc").exists()


def test_it_resolves_and_cancels_plans_by_fuzzy_overlap():
    say("<luna><plan>call the pharmacy friday at 5pm</plan></luna>", actor="luna", side=USER)
    say("<luna><plan>weekly review of the budget</plan></luna>", actor="luna", side=USER)
    say("<say>well done</say><plan>done: pharmacy call</plan>")
    say("<plan>cancel: budget review</plan>")
    statuses = dict(WorkingMemory.objects.values_list("content", "status"))
    assert statuses == {
        "call the pharmacy friday at 5pm": "resolved",
        "weekly review of the budget": "dropped",
    }


def test_it_drops_a_pin_and_ignores_a_lifecycle_that_matches_nothing():
    say("<luna><pin>sugars in tea: none</pin></luna>", actor="luna", side=USER)
    _, result = say("<pin>drop: quantum physics</pin>")
    assert active("pin") == ["sugars in tea: none"]
    assert result.ignored == ["pin drop: no active pin matches"]
    say("<pin>release: sugars in tea</pin>")
    assert active("pin") == []


def test_it_keeps_a_lifecycle_tag_that_shares_only_stop_words_and_changes_nothing():
    say("<luna><plan>call the pharmacy</plan></luna>", actor="luna", side=USER)
    event, result = say("<say>on it</say><plan>done: the dishes</plan>")
    assert active("plan") == ["call the pharmacy"]
    assert result.resolved == []
    assert result.ignored == ["plan resolve: no active plan matches"]
    assert EventTag.objects.filter(event=event, tag="plan").exists()
    assert IngestRecord.objects.get(event_id=event.pk).changes["ignored"] == result.ignored


def test_it_resolves_a_plan_by_its_content_words():
    say("<luna><plan>wash the dishes</plan></luna>", actor="luna", side=USER)
    say("<plan>done: dishes</plan>")
    assert active("plan") == []


def test_it_resolves_the_newest_of_two_plans_the_words_name_equally():
    say("<luna><plan>dry dishes</plan></luna>", actor="luna", side=USER)
    say("<luna><plan>wash the dishes</plan></luna>", actor="luna", side=USER, at=T0 + HOUR)
    # a retag makes the older plan the newest again
    say("<luna><plan>dry dishes</plan></luna>", actor="luna", side=USER, at=T0 + 2 * HOUR)
    say("<plan>done: the dishes</plan>", at=T0 + 3 * HOUR)
    assert active("plan") == ["wash the dishes"]


def test_it_parses_a_plans_due_date_at_write_time():
    say("<luna><plan>call the pharmacy friday at 5pm</plan></luna>", actor="luna", side=USER)
    plan = WorkingMemory.objects.get(type="plan")
    assert plan.due.astimezone(ZoneInfo("UTC")) == datetime(
        2026, 11, 27, 17, 0, tzinfo=ZoneInfo("UTC")
    )


def test_it_refreshes_an_identical_item_instead_of_copying_it():
    say("<thought>she hums when she sews</thought>", turn=1)
    later = T0 + timedelta(hours=3)
    say("<thought>she hums when she sews</thought>", at=later, turn=4)
    item = WorkingMemory.objects.get(type="thought")
    assert (item.refreshed_at, item.turn) == (later, 4)


def test_it_links_items_to_the_fragments_they_name():
    Fragment.objects.create(key="fairy")
    Fragment.objects.create(key="body-training")
    say("<thought>the fairy dress again; body-training tomorrow</thought>")
    item = WorkingMemory.objects.get(type="thought")
    assert sorted(item.fragments.values_list("key", flat=True)) == ["body-training", "fairy"]


def test_it_ingests_an_event_only_once():
    event, parsed = event_record(text="<feeling>uneasy</feeling>", actor="claude", ts=T0)
    first = working_memory_ingest(parsed=parsed, event=event, side=COMPANION, turn=1)
    again = working_memory_ingest(parsed=parsed, event=event, side=COMPANION, turn=1)
    assert len(first.created) == 1 and again.created == []
    assert WorkingMemory.objects.count() == 1
    assert IngestRecord.objects.get(event_id=event.pk).changes["created"] == first.created
