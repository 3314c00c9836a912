from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection, transaction
from django.urls import reverse

from events.models import Event
from events.parse import parse
from gem.meaning import semantic_hash
from gem.models import AmbientProse, Fragment, FragmentEdge, Identity, WakeText, WorkingMemory
from gem.recall import recall_items
from gem.recalled import Recall
from gem.selectors import (
    LINGERING_FIELDS,
    GemCopy,
    ambient_prose_check,
    gem_copy,
    gem_current,
    identities_current,
    wake_text_current,
    working_memory_scores,
)
from gem.services import working_memory_sweep
from heart.ingest import USER, working_memory_ingest

pytestmark = pytest.mark.django_db


def test_it_finds_keys_without_fragments_and_fragments_never_mentioned():
    for key in ("fairy", "jirai", "y'lhara", "body-training"):
        Fragment.objects.create(key=key)
    AmbientProse.objects.create(content="Old draft naming [nothing].")
    AmbientProse.objects.create(
        content="Luna's [fairy] days, [y'lhara]'s journal, [piano] and [fairy] again."
    )
    check = ambient_prose_check()
    assert check.missing == ["piano"]
    assert check.unmentioned == ["body-training", "jirai"]


def test_it_checks_a_draft_before_it_is_saved():
    Fragment.objects.create(key="fairy")
    assert ambient_prose_check("[fairy] and [wardrobe]").missing == ["wardrobe"]
    assert ambient_prose_check("").unmentioned == ["fairy"]


def test_it_reads_identities_once_with_their_sides():
    Identity.objects.create(name="mira", side="companion", color="#aabbcc")
    who = identities_current()
    assert {"luna", "claude", "mira"} <= set(who.names)
    assert who.companions == {"claude", "y'lhara", "mira"}
    assert who.default_companion == "claude"
    assert who.users == ["hasuki", "renki", "luna", "chloe", "strah"]
    assert who.sides["luna"] == "user" and who.sides["mira"] == "companion"


# --- The process's copy of what turns read (GemCopy) -------------------------------------


def active_contents() -> list[str]:
    return sorted(row.content for row in gem_current().working_memory)


def remembered(content: str, **fields) -> WorkingMemory:
    return WorkingMemory.objects.create(
        content=content,
        semantic_hash=semantic_hash(content),
        **{"type": "thought", "turn": 1, **fields},
    )


def test_it_reads_the_active_working_memory_and_the_texts():
    remembered("tea without sugar")
    remembered("an old worry", status="resolved")
    WakeText.objects.create(kind="wake", content="Good morning.")
    AmbientProse.objects.create(content="Quiet evenings.")
    gem = gem_current()
    assert [row.content for row in gem.working_memory] == ["tea without sugar"]
    assert gem.working_memory[0]._fields == LINGERING_FIELDS
    assert (gem.wake_text, gem.ambient_prose) == ("Good morning.", "Quiet evenings.")
    assert gem.image_text == wake_text_current("image")
    assert gem.identities == identities_current()


def test_a_hidden_plan_scores_nothing_until_its_resurfacing_window():
    now = datetime(2026, 12, 1, 12, tzinfo=UTC)
    due = now + timedelta(days=5)
    shown = remembered("the dentist", type="plan", due=due, refreshed_at=now)
    remembered("a surprise party", type="plan", due=due, refreshed_at=now, hidden=True)
    rows = sorted(gem_current().working_memory, key=lambda row: row.id)

    def scores_at(moment):
        return working_memory_scores(rows, now=moment, current_turn=1, pressure=0)

    assert scores_at(now)[1] == 0.0 and scores_at(now)[0] == 1.0
    assert scores_at(due - timedelta(hours=49)) == [pytest.approx(0.08), 0.0]
    opened = due - timedelta(hours=24)
    assert scores_at(opened)[1] == scores_at(opened)[0] == pytest.approx(0.54)
    assert rows[0].id == shown.id


def test_it_asks_one_query_when_nothing_changed(django_assert_num_queries):
    remembered("tea without sugar")
    gem_current()
    with django_assert_num_queries(1):
        assert active_contents() == ["tea without sugar"]


def test_it_reads_again_only_the_rows_that_changed(django_assert_max_num_queries):
    kept = remembered("tea without sugar")
    changed = remembered("the rain")
    gem_current()
    WorkingMemory.objects.filter(pk=changed.pk).update(content="the rain again")
    with django_assert_max_num_queries(2) as captured:
        assert active_contents() == ["tea without sugar", "the rain again"]
    assert f"IN ({changed.pk})" in captured.captured_queries[-1]["sql"]
    assert kept.pk != changed.pk


@pytest.mark.django_db(databases="__all__")
def test_it_sees_what_ingest_creates_refreshes_and_drops():
    pin = remembered("call the pharmacy", refreshed_at=datetime(2026, 1, 1, tzinfo=UTC))
    WorkingMemory.objects.filter(pk=pin.pk).update(type="pin")
    assert active_contents() == ["call the pharmacy"]
    event = Event.objects.create(content="…", actor="luna", ts=datetime(2026, 3, 1, tzinfo=UTC))
    parsed = parse("<pin>water the plants</pin><pin>call the pharmacy</pin>", identities=[])
    working_memory_ingest(parsed=parsed, event=event, side=USER, turn=2)
    rows = {row.content: row for row in gem_current().working_memory}
    assert sorted(rows) == ["call the pharmacy", "water the plants"]
    assert rows["call the pharmacy"].refreshed_at == event.ts  # the retag, seen
    dropping = Event.objects.create(content="…", actor="luna", ts=event.ts)
    parsed = parse("<pin>drop: call the pharmacy</pin>", identities=[])
    working_memory_ingest(parsed=parsed, event=dropping, side=USER, turn=3)
    assert active_contents() == ["water the plants"]


def test_it_sees_what_the_decay_sweep_marks_decayed():
    now = datetime(2026, 3, 1, 12, tzinfo=UTC)
    faded = WorkingMemory.objects.create(
        type="feeling", content="restless", turn=1, refreshed_at=now - timedelta(days=3)
    )
    remembered("tea without sugar", refreshed_at=now)
    assert active_contents() == ["restless", "tea without sugar"]
    assert working_memory_sweep(now=now, current_turn=1) == [faded.pk]
    assert active_contents() == ["tea without sugar"]


def test_it_sees_edits_and_deletions_made_in_the_admin(admin_client):
    item = remembered("tea without sugar")
    gone = remembered("the rain")
    assert active_contents() == ["tea without sugar", "the rain"]
    form = {
        "type": "thought",
        "content": "tea with honey",
        "subject": "",
        "actor": "",
        "status": "active",
        "turn": "1",
        "created_at_0": "2026-03-01",
        "created_at_1": "09:00:00",
        "refreshed_at_0": "2026-03-01",
        "refreshed_at_1": "09:00:00",
        "refs-TOTAL_FORMS": "0",
        "refs-INITIAL_FORMS": "0",
    }
    change = admin_client.post(reverse("admin:gem_workingmemory_change", args=[item.pk]), form)
    assert change.status_code == 302, change.content.decode()[:2000]
    delete = admin_client.post(
        reverse("admin:gem_workingmemory_delete", args=[gone.pk]), {"post": "yes"}
    )
    assert delete.status_code == 302
    assert active_contents() == ["tea with honey"]
    wake = admin_client.post(
        reverse("admin:gem_waketext_add"),
        {
            "kind": "wake",
            "content": "Edited wake text.",
            "created_at_0": "2099-01-01",
            "created_at_1": "09:00:00",
        },
    )
    assert wake.status_code == 302
    assert gem_current().wake_text == "Edited wake text."


def test_it_sees_texts_and_identities_changed_behind_its_back():
    before = gem_current()
    AmbientProse.objects.create(content="New prose.")
    Identity.objects.filter(name="luna").update(side="companion")
    with connection.cursor() as cursor:  # not through the ORM at all
        cursor.execute("UPDATE gem_waketext SET content = 'Raw.' WHERE kind = 'image'")
    after = gem_current()
    assert before.ambient_prose != "New prose." and after.ambient_prose == "New prose."
    assert "luna" in after.identities.companions
    assert after.image_text == "Raw."


def test_it_reads_everything_again_after_a_rollback():
    remembered("tea without sugar")
    with pytest.raises(RuntimeError), transaction.atomic():
        remembered("never happened")
        remembered("nor this")
        assert active_contents() == ["never happened", "nor this", "tea without sugar"]
        raise RuntimeError("roll back")
    assert active_contents() == ["tea without sugar"]


def test_it_copes_with_many_changes_at_once():
    for n in range(GemCopy.RELOAD_OVER + 5):
        remembered(f"thought {n}")
    gem_current()
    WorkingMemory.objects.update(status="resolved")
    remembered("the only one left")
    assert active_contents() == ["the only one left"]


def test_it_gives_the_same_rows_as_reading_afresh():
    for n in range(20):
        remembered(f"thought {n}", subject="luna" if n % 3 else "")
    gem_current()
    WorkingMemory.objects.filter(content__endswith="3").update(status="dropped")
    WorkingMemory.objects.filter(content__endswith="5").update(subject="hasuki")
    remembered("a late one")
    kept = gem_current().working_memory
    gem_copy.clear()
    assert sorted(kept) == sorted(gem_current().working_memory)


def test_it_recalls_once_until_a_fragment_or_an_edge_changes(django_assert_num_queries):
    fairy = Fragment.objects.create(key="fairy", ambient="Soft.", inventory="Grey crewneck.")
    asked = [Recall("fairy")]
    assert [i.text for i in gem_current().recalled(asked)] == ["Grey crewneck."]
    with django_assert_num_queries(1):  # the change query only
        assert [i.text for i in gem_current().recalled(asked)] == ["Grey crewneck."]
    Fragment.objects.filter(key="fairy").update(inventory="Knitted overcoat.")
    assert [i.text for i in gem_current().recalled(asked)] == ["Knitted overcoat."]
    lace = Fragment.objects.create(key="lace", ambient="Lace.")
    FragmentEdge.objects.create(source=fairy, target=lace)
    assert [i.key for i in gem_current().recalled(asked)] == ["fairy", "lace"]
    assert gem_current().recalled(asked) == recall_items(asked)
