"""The event index written again after a correction (lens/reindex.py)."""

import pytest
from django.db import connections

from events.models import Correction, Event
from lens.reindex import event_rows_rewritten
from lens.search import search

pytestmark = pytest.mark.django_db(databases="__all__")


@pytest.fixture
def log():
    said = ["the heron stood still", "by the weir", "in the rain", "all morning", "and left"]
    return [Event.objects.create(actor="luna", content=text) for text in said]


def vectors() -> list[int]:
    with connections["events"].cursor() as cursor:
        cursor.execute("SELECT event_id FROM lens_event_vector ORDER BY event_id")
        return [event_id for (event_id,) in cursor.fetchall()]


def test_it_writes_the_rows_holding_the_event_again_from_the_corrected_log(log):
    Correction.objects.create(
        event_id=log[1].pk, sequence=0, kind="edit", text="by the mill", made_by="owner"
    )

    event_rows_rewritten(log[1].pk)

    # Its own row and, as context, the two after it: "weir" nowhere, "mill" in all three.
    assert not search("weir", kinds=("event",), words_only=True)
    found = {hit.id for hit in search("mill", kinds=("event",), words_only=True)}
    assert found == {log[1].pk, log[2].pk, log[3].pk}


def test_it_removes_the_vectors_made_with_the_event_and_says_which(log):
    with connections["events"].cursor() as cursor:
        for event in log:
            cursor.execute(
                "INSERT INTO lens_event_vector (event_id, vector, written) VALUES (%s, %s, %s)",
                [event.pk, b"\\x00\\x00", 1],
            )

    around = event_rows_rewritten(log[2].pk)

    assert around == (log[1].pk, log[3].pk)
    assert vectors() == [log[0].pk, log[4].pk]
