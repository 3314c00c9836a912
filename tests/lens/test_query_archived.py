"""Mira's memory query with ``include_archived`` reads the working-memory archive too."""

from datetime import UTC, datetime, timedelta

import pytest

from gem.archive import archive_run
from gem.models import Fragment, WorkingMemory
from gem.services import working_memory_create, working_memory_status_set
from lens.query import MemoryQuery, memory_query

pytestmark = pytest.mark.django_db(databases="__all__")

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def archived(content, *, type="thought", valence=0.0):
    """An item written and resolved long ago, then moved to the archive."""
    long_ago = NOW - timedelta(days=200)
    item = working_memory_create(
        type=type, content=content, actor="luna", at=long_ago, turn=1, valence=valence
    ).item
    working_memory_status_set(item_ids=[item.pk], status="resolved", reason="done", now=long_ago)
    archive_run(now=NOW)
    assert not WorkingMemory.objects.filter(pk=item.pk).exists()
    return item


def entries(**query):
    return memory_query(MemoryQuery(**query), now=NOW)


def test_archived_items_come_back_only_when_asked_for():
    gone = archived("picked the last of the plums")
    here = working_memory_create(
        type="thought", content="the plum tree needs pruning", actor="luna", at=NOW, turn=2
    ).item
    assert [entry.ref for entry in entries(type="thought")] == [f"wm:{here.pk}"]

    found = entries(type="thought", include_archived=True)

    assert [entry.ref for entry in found] == [f"wm:{here.pk}", f"wm:{gone.pk}"]
    assert found[1].archived and found[1].status == "resolved"
    assert found[1].as_json()["archived"] is True and not found[0].archived


def test_the_filters_hold_for_archived_items():
    Fragment.objects.create(key="orchard")
    plums = archived("picked plums in the orchard", valence=0.8)
    archived("a grey morning", type="feeling", valence=-0.5)

    def refs(**query):
        return [entry.ref for entry in entries(include_archived=True, **query)]

    assert refs(type="feeling", emotion="positive") == []
    assert refs(tags=("orchard",)) == [f"wm:{plums.pk}"]
    assert refs(emotion="intense") == [f"wm:{plums.pk}"]
    assert refs(contains="plum picking") == [f"wm:{plums.pk}"]
    assert refs(mentions="ORCHARD", type="thought") == [f"wm:{plums.pk}"]
    assert refs(since=NOW - timedelta(days=10), type="thought") == []
