"""The Heart's own record: the context snapshot of a turn, in its own store."""

import pytest

from events.models import Event, Turn
from heart.models import ContextSnapshot

pytestmark = pytest.mark.django_db(databases="__all__")


def test_it_keeps_snapshots_in_their_own_store():
    event = Event.objects.create(content="<luna><say>hello</say></luna>", actor="luna")
    turn = Turn.objects.create(event=event, number=1)
    snapshot = ContextSnapshot.objects.create(
        turn=turn.pk, assembled_system="wake", assembled_user="hello", token_counts={"wake": 1}
    )
    assert snapshot._state.db == "snapshots"
    assert ContextSnapshot.objects.get(turn=turn.pk).token_counts == {"wake": 1}
