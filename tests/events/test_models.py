import pytest
from django.conf import settings
from django.db import IntegrityError, connections, transaction

from events.models import AppendOnlyError, Correction, Event, EventTag, Turn

pytestmark = pytest.mark.django_db(databases="__all__")


@pytest.fixture
def event():
    event = Event.objects.create(content="<luna><say>hello</say></luna>", actor="luna")
    EventTag.objects.create(event=event, tag="say")
    return event


def raw(sql, params=()):
    """Run SQL on the events store inside a savepoint, so a refusal leaves the test usable."""
    with transaction.atomic(using="events"), connections["events"].cursor() as cursor:
        cursor.execute(sql, params)


def test_it_stores_an_event_exactly_as_written(event):
    stored = Event.objects.get(pk=event.pk)
    assert stored.content == "<luna><say>hello</say></luna>"
    assert stored.actor == "luna"
    assert list(stored.tags.values_list("tag", flat=True)) == ["say"]


def test_it_refuses_to_save_a_changed_event(event):
    event.content = "rewritten"
    with pytest.raises(AppendOnlyError, match="append-only"):
        event.save()
    assert Event.objects.get(pk=event.pk).content == "<luna><say>hello</say></luna>"


def test_it_refuses_to_delete_an_event_or_a_tag(event):
    with pytest.raises(AppendOnlyError):
        event.delete()
    with pytest.raises(AppendOnlyError):
        event.tags.get().delete()
    assert Event.objects.filter(pk=event.pk).exists()


@pytest.mark.parametrize("model", [Event, EventTag])
def test_it_refuses_queryset_updates_and_deletes(event, model):
    with pytest.raises(AppendOnlyError):
        model.objects.all().delete()
    with pytest.raises(AppendOnlyError):
        model.objects.filter(pk__gt=0).update(pk=99)
    with pytest.raises(AppendOnlyError):
        model.objects.bulk_update(list(model.objects.all()), ["pk"])
    assert model.objects.count() == 1


def test_it_refuses_update_or_create_on_events(event):
    with pytest.raises(AppendOnlyError):
        Event.objects.update_or_create(pk=event.pk, defaults={"content": "x"})


REFUSED_SQL = [
    "UPDATE heart_event SET content = 'rewritten'",
    "DELETE FROM heart_event",
    "UPDATE heart_eventtag SET tag = 'do'",
    "DELETE FROM heart_eventtag",
    "UPDATE events_correction SET text = 'rewritten'",
    "DELETE FROM events_correction",
]
if "postgresql" in settings.DATABASES["events"]["ENGINE"]:
    # Deferred foreign-key checks of this test's inserts would block TRUNCATE before the
    # trigger could refuse it, so they are run first.
    REFUSED_SQL.append(
        "SET CONSTRAINTS ALL IMMEDIATE; TRUNCATE heart_eventtag, heart_event CASCADE"
    )
    REFUSED_SQL.append("SET CONSTRAINTS ALL IMMEDIATE; TRUNCATE events_correction")


@pytest.mark.parametrize("sql", REFUSED_SQL)
def test_it_refuses_raw_sql_that_changes_the_log(event, sql):
    Correction.objects.create(event=event, sequence=0, kind="edit", text="hi", made_by="owner")
    with pytest.raises(IntegrityError, match="append-only"):
        raw(sql)
    assert Event.objects.get(pk=event.pk).content == "<luna><say>hello</say></luna>"
    assert EventTag.objects.filter(event=event, tag="say").exists()
    assert Correction.objects.get(event=event).text == "hi"


def test_it_refuses_to_change_or_remove_a_correction(event):
    correction = Correction.objects.create(
        event=event, sequence=0, kind="retraction", made_by="owner"
    )
    correction.kind = "restoration"
    with pytest.raises(AppendOnlyError):
        correction.save()
    with pytest.raises(AppendOnlyError):
        Correction.objects.all().delete()
    assert Correction.objects.get().kind == "retraction"


def test_only_one_correction_can_be_the_next_of_an_event(event):
    Correction.objects.create(event=event, sequence=0, kind="retraction", made_by="owner")
    with pytest.raises(IntegrityError), transaction.atomic(using="events"):
        Correction.objects.create(event=event, sequence=0, kind="edit", text="x", made_by="b")


def test_it_refuses_an_unknown_kind_of_correction(event):
    with pytest.raises(IntegrityError), transaction.atomic(using="events"):
        Correction.objects.create(event=event, sequence=0, kind="delete", made_by="owner")


def test_it_still_accepts_new_events_through_raw_sql(event):
    raw(
        "INSERT INTO heart_event (ts, content, actor, image) VALUES (%s, %s, %s, %s)",
        [event.ts, "<say>again</say>", "claude", ""],
    )
    assert Event.objects.count() == 2


def test_it_keeps_each_tag_once_per_event(event):
    with pytest.raises(IntegrityError), transaction.atomic(using="events"):
        EventTag.objects.create(event=event, tag="say")


def test_it_lets_a_turn_change_status(event):
    turn = Turn.objects.create(event=event, number=1)
    Turn.objects.filter(pk=turn.pk, status="queued").update(status="running")
    assert Turn.objects.get(pk=turn.pk).status == "running"


def test_it_refuses_an_unknown_turn_status(event):
    with pytest.raises(IntegrityError), transaction.atomic(using="events"):
        Turn.objects.create(event=event, number=1, status="paused")
