"""Mira's memory query: each filter on its own, ordering, limits and parameter errors."""

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from events.models import Correction
from gem.models import Fragment, FragmentEdge, FragmentSource, WorkingMemory, WorkingMemoryRef
from gem.services import working_memory_create
from heart.ingest import event_record
from lens.query import MemoryQuery, QueryError, memory_query, query_from_params

pytestmark = pytest.mark.django_db(databases="__all__")

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def event(text, *, actor="luna", days_ago=0):
    made, _ = event_record(
        text=text, actor=actor, ts=NOW - timedelta(days=days_ago), identities=["luna"]
    )
    return made


def wm(content, *, type="thought", days_ago=0, **fields):
    at = NOW - timedelta(days=days_ago)
    return WorkingMemory.objects.create(
        type=type, content=content, created_at=at, refreshed_at=at, **fields
    )


def refs(**query):
    return [entry.ref for entry in memory_query(MemoryQuery(**query), now=NOW)]


def test_it_orders_by_date_newest_first_over_every_kind_by_default():
    old = event("old news", days_ago=3)
    item = wm("a thought", days_ago=1)
    Fragment.objects.create(key="fairy", ambient="White softness.")
    fragment_time = Fragment.objects.get(key="fairy").updated_at
    assert fragment_time > NOW  # written now, after the fixed NOW of the other rows
    assert refs() == ["fragment:fairy", f"wm:{item.pk}", f"event:{old.pk}"]


def test_since_until_and_last_n_days():
    a = event("a", days_ago=10)
    b = event("b", days_ago=5)
    c = event("c", days_ago=1)
    assert refs(type="event", since=NOW - timedelta(days=6)) == [f"event:{c.pk}", f"event:{b.pk}"]
    assert refs(type="event", until=NOW - timedelta(days=6)) == [f"event:{a.pk}"]
    assert refs(type="event", last_n_days=2) == [f"event:{c.pk}"]


def test_contains_is_full_text_and_orders_by_relevance():
    event("nothing to see")  # before the others: the turns after a match match by context
    event("we named the puppy Biscuit")
    best = event("the puppy puppies and more puppy talk, puppy")
    found = refs(contains="puppy", type="event")
    assert found[0] == f"event:{best.pk}" and len(found) == 2


def test_tags_must_all_be_there():
    both = event("<luna><say>hi</say></luna>")
    event("<luna>hello</luna>")
    assert refs(tags=("luna", "say")) == [f"event:{both.pk}"]
    fragment = Fragment.objects.create(key="garden")
    item = wm("weed the garden", type="thought")
    WorkingMemoryRef.objects.create(wm=item, fragment=fragment)
    assert refs(tags=("thought", "garden")) == [f"wm:{item.pk}"]


def test_type_picks_a_working_memory_type_or_a_kind():
    feeling = wm("warm", type="feeling")
    wm("a plan", type="plan")
    e = event("said")
    assert refs(type="feeling") == [f"wm:{feeling.pk}"]
    assert refs(type="event") == [f"event:{e.pk}"]


def test_min_and_max_importance():
    low = wm("low", importance=0.2)
    mid = wm("mid", importance=0.5)
    high = wm("high", importance=0.9)
    assert set(refs(min_importance=0.5)) == {f"wm:{mid.pk}", f"wm:{high.pk}"}
    assert refs(max_importance=0.3) == [f"wm:{low.pk}"]
    assert refs(order_by="importance") == [f"wm:{high.pk}", f"wm:{mid.pk}", f"wm:{low.pk}"]


def test_related_to_follows_edges_references_and_sources():
    fairy = Fragment.objects.create(key="fairy")
    wardrobe = Fragment.objects.create(key="wardrobe")
    FragmentEdge.objects.create(source=wardrobe, target=fairy)
    source = event("the crewneck")
    FragmentSource.objects.create(fragment=fairy, event_id=source.pk)
    item = wm("wear the fairy", event_id=source.pk)
    WorkingMemoryRef.objects.create(wm=item, fragment=fairy)
    event("unrelated")
    assert set(refs(related_to="fragment:fairy")) == {
        "fragment:wardrobe",
        f"wm:{item.pk}",
        f"event:{source.pk}",
    }
    assert set(refs(related_to=f"wm:{item.pk}")) == {"fragment:fairy", f"event:{source.pk}"}
    assert set(refs(related_to=f"event:{source.pk}")) == {"fragment:fairy", f"wm:{item.pk}"}


def test_mentions_finds_a_name_in_the_text_or_as_the_speaker():
    said = event("ask Renki about it")
    by = event("hello", actor="renki")
    event("nobody")
    assert set(refs(mentions="renki", type="event")) == {f"event:{said.pk}", f"event:{by.pk}"}


def test_emotion_reads_the_valence():
    happy = wm("glad", type="feeling", valence=0.5)
    sad = wm("low", type="feeling", valence=-0.8)
    calm = wm("calm", type="feeling", valence=0.0)
    assert refs(emotion="positive") == [f"wm:{happy.pk}"]
    assert refs(emotion="negative") == [f"wm:{sad.pk}"]
    assert refs(emotion="neutral") == [f"wm:{calm.pk}"]
    assert refs(emotion="intense") == [f"wm:{sad.pk}"]


def test_include_archived_brings_working_memory_that_is_no_longer_active():
    active = wm("still here")
    gone = wm("resolved", status="resolved")
    assert refs(type="thought") == [f"wm:{active.pk}"]
    assert set(refs(type="thought", include_archived=True)) == {f"wm:{active.pk}", f"wm:{gone.pk}"}


def test_limit_defaults_to_ten_and_caps_at_a_hundred():
    for n in range(12):
        event(f"event {n}", days_ago=n)
    assert len(refs(type="event")) == 10
    assert len(refs(type="event", limit=3)) == 3
    with pytest.raises(QueryError, match="limit: must be from 1 to 100, not 101"):
        MemoryQuery(limit=101)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"limit": "many"}, "limit: 'many' is not a whole number"),
        ({"limit": "0"}, "limit: must be from 1 to 100"),
        ({"since": "yesterday"}, "since: 'yesterday' is not an ISO date"),
        ({"min_importance": "2"}, "min_importance: must be from 0 to 1"),
        ({"emotion": "glad"}, "emotion: 'glad' is not one of"),
        ({"order_by": "size"}, "order_by: 'size' is not one of"),
        ({"order_by": "relevance"}, "order_by: relevance needs words in contains"),
        ({"related_to": "thing"}, "related_to: 'thing' is not event:ID"),
        ({"include_archived": "perhaps"}, "include_archived: 'perhaps' is not true or false"),
        ({"colour": "red"}, "colour: not a query parameter"),
        ({"type": "idea"}, "type: 'idea' is not one of"),
    ],
)
def test_it_names_the_bad_parameter(params, message):
    with pytest.raises(QueryError, match=message):
        query_from_params(params)


def test_an_unknown_related_item_is_a_clear_error():
    with pytest.raises(QueryError, match="related_to: no event 999"):
        memory_query(query_from_params({"related_to": "event:999"}), now=NOW)


@given(st.dictionaries(st.sampled_from(["limit", "last_n_days", "min_importance"]), st.text()))
def test_parameters_are_read_or_refused_clearly_never_crash(params):
    try:
        query = query_from_params(params)
    except QueryError as error:
        assert str(error).split(":")[0] in params
    else:
        assert 1 <= query.limit <= 100


def test_importance_and_emotion_find_items_as_they_are_written():
    """Items written the ordinary way are scored when written, so these filters find them."""

    def written(type, content):
        made = working_memory_create(type=type, content=content, actor="claude", at=NOW, turn=1)
        return f"wm:{made.item.pk}"

    glad = written("feeling", "so happy and grateful for the lovely garden")
    grief = written("thought", "the loss still hurts, awful and sad")
    plain = written("desc", "the kettle is on the shelf")

    assert refs(emotion="positive") == [glad]
    assert refs(emotion="negative") == [grief]
    assert refs(emotion="neutral") == [plain]
    assert set(refs(min_importance=0.55)) == {glad, grief}
    assert refs(max_importance=0.5) == [plain]


def test_events_are_read_as_their_corrections_leave_them():
    edited, retracted = event("we met at the harbour"), event("the code is 4471")
    Correction.objects.create(
        event=edited, sequence=0, kind="edit", text="we met at the station", made_by="owner"
    )
    Correction.objects.create(event=retracted, sequence=0, kind="retraction", made_by="owner")

    found = memory_query(MemoryQuery(type="event"), now=NOW)

    assert [(entry.id, entry.text) for entry in found] == [(edited.pk, "we met at the station")]
    assert refs(mentions="harbour", type="event") == []
    assert refs(mentions="station", type="event") == [f"event:{edited.pk}"]
