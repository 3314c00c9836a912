"""The Lens's migrations: rows that exist when the indexes are made are indexed; vectors of the
old kind are removed."""

import importlib
from datetime import UTC, datetime

import pytest
from django.db import connections

from gem.models import Fragment, WorkingMemory
from heart.ingest import event_record
from lens.search import search
from mirror.models import Summary
from tests.conftest import semantic_extra_required

pytestmark = pytest.mark.django_db(databases="__all__")

migration = importlib.import_module("lens.migrations.0001_search_indexes")
summary_index = importlib.import_module("lens.migrations.0008_summary_index")


def run(alias: str, statements: dict[str, list[str]]) -> None:
    connection = connections[alias]
    with connection.cursor() as cursor:
        for statement in statements[connection.vendor]:
            cursor.execute(statement)


def test_it_indexes_the_rows_that_exist_when_it_runs():
    events = {"sqlite": migration.SQLITE_EVENTS_DROP, "postgresql": migration.POSTGRES_EVENTS_DROP}
    gem = {"sqlite": migration.SQLITE_GEM_DROP, "postgresql": migration.POSTGRES_GEM_DROP}
    run("events", events)
    run("default", gem)
    at = datetime(2026, 1, 5, 10, 0, tzinfo=UTC)
    first, _ = event_record(text="which bakery is best?", actor="ana", ts=at, identities=[])
    answer, _ = event_record(text="Marlow's, by the canal", actor="ben", ts=at, identities=[])
    Fragment.objects.create(key="canal", ambient="The canal walk.")
    item = WorkingMemory.objects.create(type="thought", content="bread from the canal bakery")
    run("events", {"sqlite": migration.SQLITE_EVENTS, "postgresql": migration.POSTGRES_EVENTS})
    run("default", {"sqlite": migration.SQLITE_GEM, "postgresql": migration.POSTGRES_GEM})
    hits = search("canal")
    assert {hit.ref for hit in hits if hit.kind != "event"} == {"fragment:canal", f"wm:{item.pk}"}
    # the question before the answer comes too, on its neighbour's share
    assert [hit.id for hit in hits if hit.kind == "event"] == [answer.pk, first.pk]
    # the context of an event indexed afterwards is the one the trigger gives it
    assert search("bakery", kinds=["event"])[0].id in {first.pk, answer.pk}
    assert {hit.id for hit in search("bakery", kinds=["event"])} == {first.pk, answer.pk}
    later, _ = event_record(text="and the canal boats", actor="ana", ts=at, identities=[])
    assert later.pk in {hit.id for hit in search("canal", kinds=["event"])}


def test_emptying_a_table_empties_its_index():
    """TRUNCATE on PostgreSQL (row triggers do not see it), DELETE on SQLite."""
    Fragment.objects.create(key="canal", ambient="The canal walk.")
    WorkingMemory.objects.create(type="thought", content="bread from the canal bakery")
    connection = connections["default"]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # The rows' deferred foreign-key checks (the near-duplicate link points into the
            # table itself) would otherwise still be pending in this transaction.
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        for table in ("gem_fragment", "gem_workingmemory"):
            if connection.vendor == "postgresql":
                cursor.execute(f"TRUNCATE {table} CASCADE")
            else:
                cursor.execute(f"DELETE FROM {table}")
    assert search("canal", kinds=["fragment", "wm"]) == []

    Fragment.objects.create(key="canal", ambient="Walked again.")
    assert [hit.ref for hit in search("canal", kinds=["fragment"])] == ["fragment:canal"]


def test_the_summary_index_holds_the_summaries_that_exist_when_it_runs():
    drop = {"sqlite": summary_index.SQLITE_DROP, "postgresql": summary_index.POSTGRES_DROP}
    run("summaries", drop)
    old = Summary.objects.create(
        level="L0", first_event_id=1, last_event_id=4, content="Ana's cello lessons began."
    )
    new = Summary.objects.create(
        level="L0", first_event_id=1, last_event_id=4, content="Ana began the cello."
    )
    Summary.objects.filter(pk=old.pk).update(superseded_by=new)
    run("summaries", {"sqlite": summary_index.SQLITE, "postgresql": summary_index.POSTGRES})
    assert {hit.id for hit in search("cello", kinds=["summary"])} == {old.pk, new.pk}
    # and the triggers follow what is written afterwards
    later = Summary.objects.create(
        level="L1", first_event_id=1, last_event_id=9, content="A term of cello lessons."
    )
    Summary.objects.filter(pk=new.pk).update(content="Ana began the viola.")
    found = search("cello", kinds=["summary"])
    assert {(hit.id, hit.detail) for hit in found} == {
        (old.pk, f"L0, events 1–4, superseded by #{new.pk}"),
        (later.pk, "L1, events 1–9"),
    }


def test_emptying_the_summaries_empties_their_index():
    """TRUNCATE on PostgreSQL (row triggers do not see it), DELETE on SQLite."""
    Summary.objects.create(level="L0", first_event_id=1, last_event_id=2, content="Kites.")
    connection = connections["summaries"]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute("TRUNCATE mirror_summary CASCADE")
        else:
            cursor.execute("DELETE FROM mirror_summary")
    assert search("kites", kinds=["summary"]) == []
    Summary.objects.create(level="L0", first_event_id=1, last_event_id=2, content="Kites again.")
    assert len(search("kites", kinds=["summary"])) == 1


@pytest.mark.parametrize(
    "migration",
    [
        "0004_event_vectors_with_exchange",
        "0005_event_vectors_of_two_models",
        "0007_event_vectors_of_one_model",
    ],
)
def test_vectors_of_the_old_kind_are_removed_and_written_again_by_the_fill(migration):
    semantic_extra_required()
    from lens import semantic

    clearing = importlib.import_module(f"lens.migrations.{migration}")
    at = datetime(2026, 1, 5, 10, 0, tzinfo=UTC)
    event, _ = event_record(text="my cello!", actor="theo", ts=at, identities=[])
    semantic.vectors_fill()
    run("events", {"sqlite": clearing.CLEAR, "postgresql": clearing.CLEAR})
    with connections["events"].cursor() as cursor:
        cursor.execute("SELECT count(*) FROM lens_event_vector")
        assert cursor.fetchone() == (0,)
    assert search("cello", kinds=["event"])[0].id == event.pk  # still found by its words
    assert semantic.vectors_fill() == 1


def test_vectors_written_before_their_write_marks_are_kept_and_read():
    semantic_extra_required()
    from lens import semantic

    marks = importlib.import_module("lens.migrations.0006_event_vector_written")
    at = datetime(2026, 1, 5, 10, 0, tzinfo=UTC)
    event, _ = event_record(text="my cello!", actor="theo", ts=at, identities=[])
    run("events", {"sqlite": marks.SQLITE_DROP, "postgresql": marks.POSTGRES_DROP})
    with connections["events"].cursor() as cursor:
        cursor.execute(
            "INSERT INTO lens_event_vector (event_id, vector) VALUES (%s, %s)",
            [event.pk, bytes(2 * sum(model.dimensions for model in semantic.sentence_models()))],
        )
    run("events", {"sqlite": marks.SQLITE, "postgresql": marks.POSTGRES})
    with connections["events"].cursor() as cursor:
        cursor.execute("SELECT event_id, written FROM lens_event_vector")
        assert cursor.fetchall() == [(event.pk, 0)]
    assert semantic.semantic_rankings("who plays the cello?", "", []) == [[event.pk]]
    assert semantic.vectors_fill() == 0  # kept: the fill writes only what is missing
