"""Time travel: a past turn's context assembled again agrees with its snapshot, and where the
Anvil changed something since, the difference is named."""

from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.auth.models import User

from events.models import Turn
from gem.models import WorkingMemory
from heart.corrections import correction_make
from heart.inspect import sections_of
from heart.models import ContextSnapshot
from heart.services import turn_claim_next, turn_run, turn_submit
from heart.travel import snapshot_travelled
from tests.heart.test_conversation_long import long_conversation  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db(databases="__all__")

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def turn(text: str, at: datetime) -> ContextSnapshot:
    submitted = turn_submit(text=text, actor="luna", at=at, enqueue=False)
    claimed = turn_claim_next()
    assert claimed is not None and claimed.pk == submitted.pk
    done = turn_run(turn=claimed)
    assert done.status == "done", done.error
    return ContextSnapshot.objects.get(turn=done.pk)


def test_every_turn_of_a_conversation_past_recent_into_summaries_is_assembled_again_exactly(
    long_conversation,  # noqa: F811 (the fixture)
):
    snapshots = [snapshot for snapshot, _ in long_conversation]
    assert any(s.items_included["summaries"] for s in snapshots)
    assert any(s.items_included["recent_window"]["moved"] for s in snapshots)
    assert any(s.items_included["left_out"]["lingering"] for s in snapshots)
    for snapshot in snapshots:
        travel = snapshot_travelled(snapshot)
        assert travel.agrees, (snapshot.turn, travel.differing, travel.changes)
        assert travel.system == snapshot.assembled_system
        assert travel.user == snapshot.assembled_user


def test_it_names_what_the_anvil_changed_since_a_turn():
    first = turn("<luna><pin>tea without sugar</pin> hello</luna>", START)
    second = turn("<luna>and the rain</luna>", START + timedelta(minutes=3))
    assert snapshot_travelled(first).agrees and snapshot_travelled(second).agrees
    pin = WorkingMemory.objects.get(type="pin")
    owner = User.objects.create_superuser("owner", password="x")
    WorkingMemory.objects.filter(pk=pin.pk).update(content="tea with honey")
    LogEntry.objects.log_actions(
        owner.pk, [pin], CHANGE, change_message=[{"changed": {"fields": ["Content"]}}]
    )
    travel = snapshot_travelled(second)
    assert not travel.agrees
    assert travel.differing == ["Lingering"]
    assert "tea with honey" in sections_of(travel.user)["Lingering"]
    assert "tea without sugar" in sections_of(second.assembled_user)["Lingering"]
    assert any(f"“{pin}”" in change and "Changed Content" in change for change in travel.changes)


def test_a_snapshot_without_its_inputs_says_it_cannot_be_assembled_again():
    snapshot = turn("<luna>hello</luna>", START)
    ContextSnapshot.objects.filter(pk=snapshot.pk).update(inputs={})
    snapshot.refresh_from_db()
    travel = snapshot_travelled(snapshot)
    assert not travel.possible and not travel.agrees
    assert "cannot be assembled again" in travel.why_not


def test_it_assembles_recent_as_the_log_stood_then_and_names_a_correction_made_since():
    first = turn("<luna>the code is 4471</luna>", START)
    second = turn("<luna>and the rain</luna>", START + timedelta(minutes=3))
    said = Turn.objects.get(pk=first.turn).event_id
    correction_make(
        event_id=said, kind="edit", text="<luna>the code is 1234</luna>", made_by="owner"
    )

    travel = snapshot_travelled(second)

    # Recent as the log stood then, byte for byte; the correction named beside it.
    assert sections_of(travel.user)["Recent"] == sections_of(second.assembled_user)["Recent"]
    assert "4471" in sections_of(travel.user)["Recent"]
    assert [
        line.endswith(f"message #{said} was edited (by owner)") for line in travel.corrections
    ] == [True]
    assert snapshot_travelled(first).corrections == travel.corrections
