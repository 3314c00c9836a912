import re
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from django.contrib.admin.models import LogEntry
from django.core.exceptions import ValidationError
from django.core.management import call_command

from compass.models import CompassPrompt
from gem import services as gem_services
from gem.importance import importance_refreshed
from gem.models import (
    AmbientProse,
    Fragment,
    FragmentEdge,
    FragmentSource,
    Identity,
    WakeText,
    WorkingMemory,
)
from gem.selectors import ambient_prose_current, newest_version
from gem.services import (
    FragmentEdgeRecorded,
    FragmentRecorded,
    FragmentSourceRecorded,
    IdentityRow,
    ReshapeError,
    WorkingMemoryError,
    WorkingMemoryRecorded,
    ambient_prose_set,
    edges_import,
    fragment_fold,
    fragment_fold_preview,
    fragment_rename,
    fragment_rename_preview,
    fragments_import,
    identities_set,
    relations_joined,
    sources_import,
    text_version_add,
    time_zone_set,
    working_memory_create,
    working_memory_match_set,
    working_memory_status_set,
    working_memory_sweep,
)
from gem.waking import TRIGGERS_MAX
from loom.models import LoomPrompt, Session
from mirror.models import MirrorPrompt

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=ZoneInfo("UTC"))


def item(type_, *, age_hours, turn=1, due=None):
    at = NOW - timedelta(hours=age_hours)
    return WorkingMemory.objects.create(
        type=type_,
        content=f"{type_} {age_hours}",
        refreshed_at=at,
        created_at=at,
        turn=turn,
        due=due,
    )


def test_it_marks_faded_items_decayed_and_keeps_the_rest():
    old_feeling = item("feeling", age_hours=20)
    fresh_feeling = item("feeling", age_hours=1)
    old_secret = item("secret", age_hours=10_000)
    untimed_plan = item("plan", age_hours=10_000)
    future_plan = item("plan", age_hours=500, due=NOW + timedelta(days=30))
    overdue_plan = item("plan", age_hours=900, due=NOW - timedelta(days=30))

    gone = working_memory_sweep(now=NOW, current_turn=1)

    assert sorted(gone) == sorted([old_feeling.pk, overdue_plan.pk])
    statuses = dict(WorkingMemory.objects.values_list("pk", "status"))
    assert statuses[old_feeling.pk] == "decayed"
    assert statuses[overdue_plan.pk] == "decayed"
    for kept in (fresh_feeling, old_secret, untimed_plan, future_plan):
        assert statuses[kept.pk] == "active"
    assert WorkingMemory.objects.get(pk=old_feeling.pk).resolved_at == NOW


def test_it_counts_turns_as_well_as_hours():
    thought = item("thought", age_hours=0, turn=1)
    assert working_memory_sweep(now=NOW, current_turn=30) == []
    assert working_memory_sweep(now=NOW, current_turn=80) == [thought.pk]


def test_it_sweeps_from_the_command_line(capsys):
    item("feeling", age_hours=500)
    call_command("decay_sweep")
    assert "Marked 1 working-memory item decayed." in capsys.readouterr().out


# --- The Anvil: rename and fold -----------------------------------------------------------


@pytest.fixture
def wardrobe():
    keys = {}
    for key, tiers in {
        "cottagecore": ("Soft rural.", "Linen and lace.", "Cream apron dress."),
        "ouji": ("Prince style.", "Shorts, knee socks.", ""),
        "wardrobe": ("All the clothes.", "", ""),
        "fairy": ("White softness.", "", "Grey crewneck."),
    }.items():
        keys[key] = Fragment.objects.create(
            key=key, ambient=tiers[0], recognition=tiers[1], inventory=tiers[2]
        )
    FragmentEdge.objects.create(source=keys["wardrobe"], target=keys["cottagecore"], relation="r")
    FragmentEdge.objects.create(source=keys["cottagecore"], target=keys["fairy"], relation="near")
    FragmentEdge.objects.create(source=keys["ouji"], target=keys["fairy"], relation="near")
    FragmentEdge.objects.create(source=keys["cottagecore"], target=keys["ouji"], relation="was")
    FragmentSource.objects.create(fragment=keys["cottagecore"], event_id=7)
    FragmentSource.objects.create(fragment=keys["ouji"], event_id=7)
    FragmentSource.objects.create(fragment=keys["cottagecore"], event_id=9)
    item = WorkingMemory.objects.create(type="pin", content="wear the [cottagecore] dress")
    item.fragments.add(keys["cottagecore"])
    AmbientProse.objects.create(content="Luna loves [cottagecore] and [fairy]; [cottagecore]!")
    return keys


def test_it_renames_a_key_and_everything_follows(admin_user, wardrobe):
    fragment_rename(old_key="cottagecore", new_key="ouji-soft", user_id=admin_user.pk)
    renamed = Fragment.objects.get(key="ouji-soft")
    assert (renamed.ambient, renamed.recognition, renamed.inventory) == (
        "Soft rural.",
        "Linen and lace.",
        "Cream apron dress.",
    )
    assert not Fragment.objects.filter(key="cottagecore").exists()
    edges = set(FragmentEdge.objects.values_list("source_id", "target_id", "relation"))
    assert edges == {
        ("wardrobe", "ouji-soft", "r"),
        ("ouji-soft", "fairy", "near"),
        ("ouji", "fairy", "near"),
        ("ouji-soft", "ouji", "was"),
    }
    assert sorted(renamed.sources.values_list("event_id", flat=True)) == [7, 9]
    assert list(WorkingMemory.objects.get().fragments.values_list("key", flat=True)) == [
        "ouji-soft"
    ]
    versions = list(AmbientProse.objects.order_by("id").values_list("content", flat=True))
    assert versions == [
        "Luna loves [cottagecore] and [fairy]; [cottagecore]!",
        "Luna loves [ouji-soft] and [fairy]; [ouji-soft]!",
    ]
    assert "Renamed “cottagecore” to “ouji-soft”" in LogEntry.objects.get().change_message


@pytest.mark.parametrize(
    ("old", "new", "reason"),
    [
        ("cottagecore", "ouji", "already a fragment"),
        ("nothing", "new-key", "no fragment “nothing”"),
        ("cottagecore", "two words", "cannot be a key"),
    ],
)
def test_it_refuses_a_rename_it_cannot_do_and_changes_nothing(
    admin_user, wardrobe, old, new, reason
):
    with pytest.raises(ReshapeError, match=reason):
        fragment_rename(old_key=old, new_key=new, user_id=admin_user.pk)
    assert Fragment.objects.count() == 4 and FragmentEdge.objects.count() == 4
    assert AmbientProse.objects.count() == 1 and not LogEntry.objects.exists()


def test_it_previews_a_fold_without_writing(wardrobe):
    plan = fragment_fold_preview(source_key="cottagecore", into_key="ouji")
    assert plan.tiers == {
        "ambient": "Prince style.\n\n## cottagecore\nSoft rural.",
        "recognition": (
            "Shorts, knee socks.\n\n## cottagecore\nLinen and lace.\n\n- cottagecore → ouji: was"
        ),
        "inventory": "## cottagecore\nCream apron dress.",
    }
    assert sorted(plan.edges_moved) == [("wardrobe", "ouji")]
    assert [(m.source, m.target, m.kept, m.relation_after) for m in plan.edges_merged] == [
        ("cottagecore", "fairy", ("ouji", "fairy"), "near"),
        ("cottagecore", "ouji", None, ""),
    ]
    assert (plan.sources_moved, plan.refs_moved, plan.ambient_mentions) == (2, 1, 2)
    assert Fragment.objects.filter(key="cottagecore").exists()
    assert Fragment.objects.get(key="ouji").ambient == "Prince style."


def test_it_folds_one_fragment_into_another_losing_nothing(admin_user, wardrobe):
    fragment_fold(source_key="cottagecore", into_key="ouji", user_id=admin_user.pk)
    ouji = Fragment.objects.get(key="ouji")
    for text in ("Soft rural.", "Linen and lace.", "Cream apron dress.", "Prince style."):
        assert text in ouji.ambient + ouji.recognition + ouji.inventory
    assert not Fragment.objects.filter(key="cottagecore").exists()
    assert set(FragmentEdge.objects.values_list("source_id", "target_id")) == {
        ("wardrobe", "ouji"),
        ("ouji", "fairy"),
    }
    assert sorted(ouji.sources.values_list("event_id", flat=True)) == [7, 9]
    assert list(WorkingMemory.objects.get().fragments.values_list("key", flat=True)) == ["ouji"]
    assert AmbientProse.objects.order_by("-id").first().content == (
        "Luna loves [ouji] and [fairy]; [ouji]!"
    )
    messages = list(LogEntry.objects.order_by("id").values_list("object_id", "change_message"))
    assert messages[0][0] == "ouji" and "Folded “cottagecore” into “ouji”" in messages[0][1]
    assert messages[1] == ("cottagecore", "Folded into “ouji”")


@pytest.fixture
def moon_and_fairy():
    """Folding moon into fairy: three of moon's edges meet one fairy has, or fairy itself."""
    made = {key: Fragment.objects.create(key=key, ambient=key) for key in MOON_KEYS}
    for source, target, relation in [
        ("fairy", "loop", "near"),
        ("moon", "loop", "moon-rel"),  # fairy → loop is there: the labels join
        ("moon", "fairy", "loop-rel"),  # would be fairy → fairy
        ("wardrobe", "fairy", ""),
        ("wardrobe", "moon", "wardrobe-moon"),  # wardrobe → fairy is there, unlabelled
        ("lake", "fairy", "shines on; near"),
        ("lake", "moon", "near"),  # a label fairy's edge already has
        ("moon", "star", "beside"),  # moved as it is
    ]:
        FragmentEdge.objects.create(source=made[source], target=made[target], relation=relation)
    return made


MOON_KEYS = ("fairy", "moon", "loop", "wardrobe", "lake", "star")


def test_it_keeps_every_label_of_a_fold(admin_user, moon_and_fairy):
    plan = fragment_fold(source_key="moon", into_key="fairy", user_id=admin_user.pk)

    assert set(FragmentEdge.objects.values_list("source_id", "target_id", "relation")) == {
        ("fairy", "loop", "near; moon-rel"),
        ("wardrobe", "fairy", "wardrobe-moon"),
        ("lake", "fairy", "shines on; near"),
        ("fairy", "star", "beside"),
    }
    fairy = Fragment.objects.get(key="fairy")
    assert fairy.recognition == "## moon\n- moon → fairy: loop-rel"
    assert plan.edges_moved == [("fairy", "star")]
    texts = [merge.as_text() for merge in plan.edges_merged]
    assert texts == [
        "lake → moon “near” merged into lake → fairy, labelled “shines on; near”",
        "moon → fairy “loop-rel” would point at itself: its label is kept in the recognition tier",
        "moon → loop “moon-rel” merged into fairy → loop, labelled “near; moon-rel”",
        "wardrobe → moon “wardrobe-moon” merged into wardrobe → fairy, labelled “wardrobe-moon”",
    ]
    message = LogEntry.objects.get(object_id="fairy").change_message
    assert "1 edge moved, 4 merged" in message
    for text in texts:
        assert text in message


def test_it_previews_the_labels_a_fold_merges_without_writing(moon_and_fairy):
    before = set(FragmentEdge.objects.values_list("source_id", "target_id", "relation"))

    plan = fragment_fold_preview(source_key="moon", into_key="fairy")

    merged = {(m.source, m.target): (m.relation, m.kept, m.in_tier) for m in plan.edges_merged}
    assert merged[("moon", "loop")] == ("moon-rel", ("fairy", "loop"), False)
    assert merged[("moon", "fairy")] == ("loop-rel", None, True)
    assert merged[("wardrobe", "moon")] == ("wardrobe-moon", ("wardrobe", "fairy"), False)
    assert plan.tiers["recognition"] == "## moon\n- moon → fairy: loop-rel"
    assert set(FragmentEdge.objects.values_list("source_id", "target_id", "relation")) == before


def test_a_label_too_long_to_join_goes_to_the_recognition_tier(admin_user, moon_and_fairy):
    FragmentEdge.objects.filter(source="fairy", target="loop").update(relation="n" * 95)

    fragment_fold(source_key="moon", into_key="fairy", user_id=admin_user.pk)

    assert FragmentEdge.objects.get(source="fairy", target="loop").relation == "n" * 95
    assert Fragment.objects.get(key="fairy").recognition == (
        "## moon\n- moon → fairy: loop-rel\n- moon → loop: moon-rel"
    )


@pytest.mark.parametrize(
    ("kept", "merged", "joined"),
    [
        ("near", "moon-rel", "near; moon-rel"),
        ("near", "near", "near"),
        ("", "wardrobe-moon", "wardrobe-moon"),
        ("near", "", "near"),
        ("a;b", "b; c;; c", "a;b; c"),
        ("", "", ""),
    ],
)
def test_it_joins_edge_labels_without_duplicates_or_empties(kept, merged, joined):
    assert relations_joined(kept, merged) == joined


def test_it_refuses_to_fold_a_fragment_into_itself_or_into_nothing(admin_user, wardrobe):
    with pytest.raises(ReshapeError, match="into itself"):
        fragment_fold(source_key="ouji", into_key="ouji", user_id=admin_user.pk)
    with pytest.raises(ReshapeError, match="no fragment “nothing”"):
        fragment_fold(source_key="nothing", into_key="ouji", user_id=admin_user.pk)
    assert Fragment.objects.count() == 4 and not LogEntry.objects.exists()


def test_it_previews_a_rename_without_writing(admin_user, wardrobe):
    plan = fragment_rename_preview(old_key="cottagecore", new_key="ouji-soft")
    assert (plan.edges, plan.sources, plan.refs, plan.ambient_mentions) == (3, 2, 1, 2)
    assert Fragment.objects.filter(key="cottagecore").exists()
    assert AmbientProse.objects.count() == 1
    with pytest.raises(ReshapeError, match="already a fragment"):
        fragment_rename_preview(old_key="cottagecore", new_key="fairy")


# --- Working memory status ----------------------------------------------------------------


def test_it_changes_status_for_a_reason_kept_in_the_log(admin_user):
    plan = WorkingMemory.objects.create(type="plan", content="buy tea")
    pin = WorkingMemory.objects.create(type="pin", content="tea", status="dropped")
    already = WorkingMemory.objects.create(type="thought", content="x", status="resolved")

    changed = working_memory_status_set(
        item_ids=[plan.pk, pin.pk, already.pk],
        status="resolved",
        reason="done on Friday",
        user_id=admin_user.pk,
        now=NOW,
    )

    assert changed == [plan.pk, pin.pk]
    assert set(WorkingMemory.objects.values_list("status", flat=True)) == {"resolved"}
    assert WorkingMemory.objects.get(pk=plan.pk).resolved_at == NOW
    logged = dict(LogEntry.objects.values_list("object_id", "change_message"))
    assert logged == {
        str(plan.pk): "Status active → resolved: done on Friday",
        str(pin.pk): "Status dropped → resolved: done on Friday",
    }


def test_it_clears_the_resolution_when_an_item_comes_back(admin_user):
    item = WorkingMemory.objects.create(
        type="pin", content="tea", status="dropped", resolved_at=NOW
    )
    working_memory_status_set(
        item_ids=[item.pk], status="active", reason="still true", user_id=admin_user.pk, now=NOW
    )
    item.refresh_from_db()
    assert (item.status, item.resolved_at) == ("active", None)


@pytest.mark.parametrize(
    ("status", "reason", "message"),
    [("resolved", "  ", "Say why"), ("gone", "because", "not a working-memory status")],
)
def test_it_refuses_a_status_change_without_a_reason_or_status(admin_user, status, reason, message):
    item = WorkingMemory.objects.create(type="pin", content="tea")
    with pytest.raises(WorkingMemoryError, match=message):
        working_memory_status_set(
            item_ids=[item.pk], status=status, reason=reason, user_id=admin_user.pk, now=NOW
        )
    assert WorkingMemory.objects.get().status == "active"
    assert not LogEntry.objects.exists()


def test_it_creates_one_item_by_every_rule_whoever_writes_it(settings):
    settings.TIME_ZONE = "UTC"
    Fragment.objects.create(key="physio")
    desc = WorkingMemory.objects.create(type="desc", content="tired", subject="Luna", turn=1)
    other = WorkingMemory.objects.create(type="desc", content="bright", subject="renki", turn=1)

    new_desc = working_memory_create(
        type="desc", content="rested", subject="luna", actor="claude", at=NOW, turn=4
    )
    plan = working_memory_create(
        type="plan", content="call the physio at 5pm", actor="luna", at=NOW, turn=4, event_id=9
    ).item

    desc.refresh_from_db()
    other.refresh_from_db()
    assert new_desc.superseded == [desc.pk]
    assert (desc.status, other.status) == ("superseded", "active")
    assert plan.due == NOW.replace(hour=17)
    assert (plan.turn, plan.event_id, plan.created_at, plan.refreshed_at) == (4, 9, NOW, NOW)
    assert list(plan.fragments.values_list("key", flat=True)) == ["physio"]


def test_it_reads_a_due_date_at_the_moment_the_words_were_said(settings):
    settings.TIME_ZONE = "UTC"
    said = datetime(2026, 11, 17, 9, 0, tzinfo=ZoneInfo("UTC"))  # the Tuesday before NOW

    plan = working_memory_create(
        type="plan", content="dentist friday at 5pm", actor="mirror", at=NOW, turn=2, words_at=said
    ).item

    assert plan.due == datetime(2026, 11, 20, 17, 0, tzinfo=ZoneInfo("UTC"))
    assert plan.created_at == NOW


def test_it_refuses_an_unknown_type_or_empty_words():
    with pytest.raises(WorkingMemoryError, match="not a working-memory type"):
        working_memory_create(type="wish", content="x", actor="a", at=NOW, turn=1)
    with pytest.raises(WorkingMemoryError, match="needs some content"):
        working_memory_create(type="pin", content="  ", actor="a", at=NOW, turn=1)
    assert not WorkingMemory.objects.exists()


def test_only_a_plan_with_a_due_date_can_be_hidden():
    due = NOW + timedelta(days=5)
    with pytest.raises(WorkingMemoryError, match="Only a plan with a due date can be hidden"):
        working_memory_create(type="pin", content="x", actor="a", at=NOW, turn=1, hidden=True)
    with pytest.raises(WorkingMemoryError, match="Only a plan with a due date"):
        working_memory_create(
            type="plan", content="someday", actor="a", at=NOW, turn=1, hidden=True
        )

    plan = working_memory_create(
        type="plan", content="a surprise", actor="compass", at=NOW, turn=1, due=due, hidden=True
    ).item

    assert list(WorkingMemory.objects.values_list("pk", "hidden", "due")) == [(plan.pk, True, due)]


def test_it_moves_the_item_a_lifecycle_names_and_nothing_when_none_matches():
    plan = WorkingMemory.objects.create(type="plan", content="water the ferns")

    assert (
        working_memory_match_set(
            type="plan", words="the ferns", status="resolved", reason="done", now=NOW
        )
        == plan.pk
    )
    assert (
        working_memory_match_set(
            type="plan", words="the ferns", status="resolved", reason="done", now=NOW
        )
        is None
    )
    plan.refresh_from_db()
    assert (plan.status, plan.resolved_at) == ("resolved", NOW)


def test_a_retag_with_other_spacing_and_case_refreshes_the_item_and_raises_its_importance():
    first = working_memory_create(
        type="pin", content="no cilantro in recipes", actor="luna", at=NOW, turn=1
    ).item
    later = NOW + timedelta(hours=3)

    again = working_memory_create(
        type="pin", content="No  Cilantro in RECIPES!", actor="luna", at=later, turn=5
    )

    assert again.refreshed and again.item.pk == first.pk
    first.refresh_from_db()
    assert (first.refreshed_at, first.turn, first.content) == (later, 5, "no cilantro in recipes")
    assert first.importance == round(0.8 + abs(first.valence) * 0.1 + 0.05, 2)  # +0.05: repeat
    assert WorkingMemory.objects.count() == 1


def test_a_repeat_leaves_the_importance_a_person_set():
    first = working_memory_create(type="pin", content="tea, no sugar", actor="a", at=NOW, turn=1)
    WorkingMemory.objects.filter(pk=first.item.pk).update(importance=0.2, importance_edited=True)

    working_memory_create(type="pin", content="Tea no sugar", actor="a", at=NOW, turn=2)

    assert WorkingMemory.objects.get().importance == 0.2


def test_a_near_duplicate_is_written_and_flagged_with_its_twin():
    twin = working_memory_create(
        type="pin", content="no cilantro in recipes", actor="luna", at=NOW, turn=1
    ).item
    unrelated = working_memory_create(
        type="pin", content="I love basil", actor="luna", at=NOW, turn=1
    ).item

    near = working_memory_create(
        type="pin", content="no cilantro in ANY recipe suggestions!", actor="luna", at=NOW, turn=2
    ).item

    assert near.pk != twin.pk and near.near_duplicate_of == twin
    assert unrelated.near_duplicate_of is None
    assert list(twin.near_duplicates.all()) == [near]


def test_it_scores_importance_and_valence_unless_given():
    Fragment.objects.create(key="miso")
    scored = working_memory_create(
        type="pin", content="we adopted miso, she is lovely", actor="luna", at=NOW, turn=1
    ).item
    given = working_memory_create(
        type="thought", content="a quiet day", actor="a", at=NOW, turn=1, importance=0.1, valence=-1
    ).item

    assert scored.valence > 0.3
    assert scored.importance == round(0.5 + 0.3 + 0.05 + scored.valence * 0.1, 2)
    assert (given.importance, given.valence) == (0.1, -1)
    with pytest.raises(WorkingMemoryError, match=r"importance 1\.5 is outside 0 to 1"):
        working_memory_create(type="pin", content="x", actor="a", at=NOW, turn=1, importance=1.5)


def test_a_recorded_item_is_written_exactly_as_it_was_and_once():
    Fragment.objects.create(key="physio")
    active_feeling = working_memory_create(
        type="feeling", content="calm", actor="luna", at=NOW, turn=1
    ).item
    recorded = WorkingMemoryRecorded(
        id=500,
        status="resolved",
        created_at=NOW - timedelta(days=9),
        refreshed_at=NOW - timedelta(days=8),
        resolved_at=NOW - timedelta(days=7),
        importance=0.9,
        valence=-0.2,
        importance_edited=True,
        fragment_keys=("physio", "gone"),
        source_event_ids=(3, 4),
    )

    def write():
        return working_memory_create(
            type="feeling",
            content="calm",  # the same as the active one: no refresh, no supersession
            actor="luna",
            at=NOW,
            turn=None,
            event_id=3,
            recorded=recorded,
        )

    written = write()

    item = WorkingMemory.objects.get(pk=500)
    assert not written.refreshed and not written.existed and written.superseded == []
    assert (item.status, item.created_at, item.refreshed_at) == (
        "resolved",
        NOW - timedelta(days=9),
        NOW - timedelta(days=8),
    )
    assert (item.importance, item.valence, item.importance_edited) == (0.9, -0.2, True)
    assert list(item.fragments.values_list("key", flat=True)) == ["physio"]
    assert sorted(item.sources.values_list("event_id", flat=True)) == [3, 4]
    assert item.semantic_hash == active_feeling.semantic_hash
    active_feeling.refresh_from_db()
    assert active_feeling.status == "active"
    assert write().existed and WorkingMemory.objects.count() == 2


# --- Who talks, and where -------------------------------------------------------------------


def seeded_rows() -> list[IdentityRow]:
    return [
        IdentityRow(id=pk, name=name, side=side, color=color)
        for pk, name, side, color in Identity.objects.order_by("id").values_list(
            "id", "name", "side", "color"
        )
    ]


def test_it_renames_recolours_adds_and_removes_identities(admin_user):
    rows = {row.name: row for row in seeded_rows()}
    kept = [
        IdentityRow(id=rows["luna"].id, name="moon", side="user", color="#112233"),
        rows["hasuki"],
        rows["claude"],
        IdentityRow(name="wren", side="user", color="#445566"),
    ]

    identities_set(identities=kept, user_id=admin_user.pk)

    assert list(Identity.objects.order_by("id").values_list("name", "side", "color")) == [
        ("hasuki", "user", "#c4a0d4"),
        ("moon", "user", "#112233"),
        ("claude", "companion", "#8b8ec8"),
        ("wren", "user", "#445566"),
    ]
    assert Identity.objects.get(name="moon").pk == rows["luna"].id
    logged = sorted(LogEntry.objects.values_list("object_repr", "change_message"))
    assert ("moon", "Changed in the set-up.") in logged
    assert ("wren", "Added in the set-up.") in logged
    assert ("y'lhara", "Removed in the set-up.") in logged


def test_it_lets_two_identities_swap_names():
    rows = {row.name: row for row in seeded_rows()}
    swapped = [
        replace_name(row, {"luna": "renki", "renki": "luna"}.get(row.name, row.name))
        for row in seeded_rows()
    ]
    identities_set(identities=swapped)
    assert Identity.objects.get(name="renki").pk == rows["luna"].id
    assert Identity.objects.get(name="luna").pk == rows["renki"].id


def replace_name(row: IdentityRow, name: str) -> IdentityRow:
    return IdentityRow(id=row.id, name=name, side=row.side, color=row.color)


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        (IdentityRow(name="two words", side="user", color="#123456"), "is not one word"),
        (IdentityRow(name="", side="user", color="#123456"), "Every identity needs a name."),
        (IdentityRow(name="x" * 41, side="user", color="#123456"), "is too long"),
        (IdentityRow(name="Luna", side="user", color="#123456"), "Two identities are called"),
        (IdentityRow(name="wren", side="user", color="red"), "The colour of “wren” must be"),
        (IdentityRow(name="wren", side="narrator", color="#123456"), "must speak for you or"),
    ],
)
def test_it_refuses_a_bad_identity_in_words_and_writes_nothing(row, reason):
    before = list(Identity.objects.values_list("id", "name", "side", "color"))
    with pytest.raises(ValidationError) as refused:
        identities_set(identities=[*seeded_rows(), row])
    assert any(reason in message for message in refused.value.messages), refused.value.messages
    assert list(Identity.objects.values_list("id", "name", "side", "color")) == before


def test_it_keeps_an_identity_on_each_side():
    users_only = [row for row in seeded_rows() if row.side == "user"]
    with pytest.raises(ValidationError, match=r"Keep at least one identity for the companion\."):
        identities_set(identities=users_only)
    assert Identity.objects.filter(side="companion").count() == 2


def test_it_keeps_the_time_zone_chosen_and_reads_due_dates_in_it(settings):
    settings.TIME_ZONE = "UTC"
    time_zone_set(name="Asia/Tokyo")
    plan = working_memory_create(
        type="plan", content="call the physio at 5pm", actor="luna", at=NOW, turn=1
    ).item
    assert plan.due == datetime(2026, 11, 23, 17, 0, tzinfo=ZoneInfo("Asia/Tokyo"))


def test_it_refuses_a_time_zone_it_does_not_know():
    with pytest.raises(ValidationError, match="“Mars/Olympus” is not a time zone"):
        time_zone_set(name="Mars/Olympus")


def test_it_sets_the_ambient_prose_as_a_new_version_keeping_the_one_before(admin_user):
    first = ambient_prose_set(content="She is [luna].", author=admin_user)
    second = ambient_prose_set(content="She is [luna], by the sea.", author=admin_user.pk)

    assert ambient_prose_current() == "She is [luna], by the sea."
    assert list(AmbientProse.objects.values_list("content", "author")) == [
        ("She is [luna], by the sea.", admin_user.pk),
        ("She is [luna].", admin_user.pk),
    ]
    assert second.created_at >= first.created_at


def test_it_keeps_an_imported_ambient_prose_version_s_id_and_time():
    ambient_prose_set(content="old prose", at=NOW, pk=41)
    version = AmbientProse.objects.get()
    assert (version.pk, version.created_at, version.author) == (41, NOW, None)


@pytest.mark.django_db(databases="__all__")
@pytest.mark.parametrize(
    ("model", "kind", "by_name"),
    [
        (WakeText, "image", False),
        (MirrorPrompt, "clean", True),
        (CompassPrompt, "review", True),
        (LoomPrompt, "cataloguer", False),
    ],
)
def test_it_adds_a_version_of_a_kind_with_its_author_as_its_store_keeps_it(
    admin_user, model, kind, by_name
):
    text_version_add(model=model, content="before", author=None, kind=kind)
    author = admin_user.get_username() if by_name else admin_user
    version = text_version_add(model=model, content="after", author=author, kind=kind)

    assert newest_version(model, kind=kind) == version
    assert version.author == author and model.objects.get(content="before").author in ("", None)


def test_it_refuses_a_version_that_does_not_say_which_text_it_is_of():
    versions = (WakeText.objects.count(), AmbientProse.objects.count())
    with pytest.raises(TypeError):
        text_version_add(model=WakeText, content="wake up")
    with pytest.raises(TypeError):
        text_version_add(model=AmbientProse, content="prose", kind="wake")
    assert (WakeText.objects.count(), AmbientProse.objects.count()) == versions


REPO = Path(__file__).resolve().parents[2]
VERSION_WRITE = re.compile(
    r"\b(AmbientProse|WakeText|MirrorPrompt|CompassPrompt|LoomPrompt)"
    r"(\.objects|\._default_manager)\.(create|bulk_create|get_or_create|update_or_create|update)\b"
)


def test_no_module_writes_a_version_of_a_text_but_the_gem_s_service():
    apps_code = [
        path
        for package in REPO.iterdir()
        if (package / "__init__.py").exists() and package.name not in {"tests", "bench"}
        for path in package.rglob("*.py")
        if "migrations" not in path.parts
    ]
    writers = [
        f"{path.relative_to(REPO)}:{number}"
        for path in apps_code
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if VERSION_WRITE.search(line)
    ]
    assert len(apps_code) > 100 and writers == []


# --- What was recorded elsewhere ------------------------------------------------------------


def test_a_recorded_item_from_a_memory_with_duplicate_rules_refreshes_or_flags_as_a_new_one():
    there = working_memory_create(
        type="pin", content="no cilantro in recipes", actor="luna", at=NOW, turn=4
    ).item
    before = there.importance

    def recorded(content, at, status="active"):
        return working_memory_create(
            type="pin",
            content=content,
            actor="mira",
            at=at,
            turn=None,
            recorded=WorkingMemoryRecorded(
                created_at=at, refreshed_at=at, status=status, importance=0.3, deduplicated=True
            ),
        )

    later = NOW + timedelta(hours=2)
    same = recorded("No  Cilantro in RECIPES!", later)
    older = recorded("no cilantro in recipes", NOW - timedelta(days=1))
    near = recorded("no cilantro in ANY recipe suggestions!", later)
    resolved = recorded("no cilantro in recipes", later, status="resolved")

    assert same.refreshed and older.refreshed and same.item.pk == older.item.pk == there.pk
    there.refresh_from_db()
    assert (there.refreshed_at, there.turn) == (later, 4)  # never back in time; its turn kept
    assert there.importance == importance_refreshed(importance_refreshed(before))
    assert not near.refreshed and near.item.near_duplicate_of == there
    assert (near.item.importance, near.item.created_at) == (0.3, later)
    assert not resolved.refreshed and resolved.item.near_duplicate_of is None
    assert WorkingMemory.objects.count() == 3


def test_it_imports_fragments_edges_and_sources_exactly_with_no_log_entry(monkeypatch):
    monkeypatch.setattr(gem_services, "IMPORT_BATCH", 2)  # three rows of each: two batches
    created, edited = NOW - timedelta(days=30), NOW - timedelta(days=3)
    keys = ("moon", "sea", "tea")

    counts = (
        fragments_import(
            rows=(
                FragmentRecorded(
                    key=key,
                    ambient=f"{key}, always known",
                    recognition=f"{key} in a story",
                    inventory="",
                    created_at=created,
                    updated_at=created if key == "moon" else edited,
                    **({"triggers": ("the pale one", "Selene")} if key == "moon" else {}),
                )
                for key in keys
            )
        ),
        edges_import(
            rows=[
                FragmentEdgeRecorded(source_id="moon", target_id="sea", relation="tides", id=40),
                FragmentEdgeRecorded(source_id="sea", target_id="tea", id=41),
                FragmentEdgeRecorded(source_id="tea", target_id="moon", relation="night", id=42),
            ]
        ),
        sources_import(
            rows=[
                FragmentSourceRecorded(fragment_id="sea", event_id=7, id=9),
                FragmentSourceRecorded(fragment_id="sea", event_id=8, id=10),
                FragmentSourceRecorded(fragment_id="moon", event_id=7),
            ]
        ),
    )

    assert counts == (3, 3, 3)
    assert list(
        Fragment.objects.values_list(
            "key", "ambient", "recognition", "created_at", "updated_at", "triggers"
        )
    ) == [
        (
            "moon",
            "moon, always known",
            "moon in a story",
            created,
            created,
            ["the pale one", "Selene"],
        ),
        ("sea", "sea, always known", "sea in a story", created, edited, []),
        ("tea", "tea, always known", "tea in a story", created, edited, []),
    ]
    assert list(FragmentEdge.objects.order_by("id").values_list("id", "source", "relation")) == [
        (40, "moon", "tides"),
        (41, "sea", ""),
        (42, "tea", "night"),
    ]
    assert sorted(FragmentSource.objects.filter(pk__in=[9, 10]).values_list("pk", "event_id")) == [
        (9, 7),
        (10, 8),
    ]
    assert FragmentSource.objects.get(fragment="moon").event_id == 7
    assert not LogEntry.objects.exists()


# --- Keys unique regardless of case, tiers within the cap ----------------------------------


def fragment(key: str, **fields) -> Fragment:
    """A fragment as the Gem's writes leave it, its key folded."""
    return Fragment.objects.create(key=key, key_folded=key.casefold(), **fields)


def recorded(key: str, inventory: str = "") -> FragmentRecorded:
    return FragmentRecorded(
        key=key, ambient="", recognition="", inventory=inventory, created_at=NOW, updated_at=NOW
    )


def test_a_rename_to_a_case_twin_of_another_fragment_is_refused_in_words(admin_user):
    fragment("biscuit")
    fragment("cat")

    with pytest.raises(ReshapeError) as refused:
        fragment_rename(old_key="cat", new_key="Biscuit", user_id=admin_user.pk)

    assert (
        str(refused.value) == "“Biscuit” is already a fragment, as “biscuit”. Fold into it instead."
    )
    assert sorted(Fragment.objects.values_list("key", flat=True)) == ["biscuit", "cat"]


def test_a_rename_may_change_only_the_case_and_keeps_triggers_and_loom_sessions(admin_user):
    biscuit = fragment("biscuit", ambient="The cat.", triggers=["the cat"])
    session = Session.objects.create(topic="cats")
    session.fragments.add(biscuit)
    AmbientProse.objects.create(content="We have [biscuit].")

    fragment_rename(old_key="biscuit", new_key="Biscuit", user_id=admin_user.pk)

    renamed = Fragment.objects.get()
    assert (renamed.key, renamed.key_folded, renamed.triggers) == (
        "Biscuit",
        "biscuit",
        ["the cat"],
    )
    assert list(session.fragments.values_list("key", flat=True)) == ["Biscuit"]
    assert ambient_prose_current() == "We have [Biscuit]."


def test_an_import_of_a_case_twin_is_refused_in_words_and_writes_nothing():
    fragment("biscuit")

    with pytest.raises(
        gem_services.FragmentRefused, match="“Biscuit” is already a fragment, as “biscuit”"
    ):
        fragments_import(rows=[recorded("moon"), recorded("Biscuit")])
    with pytest.raises(gem_services.FragmentRefused, match="“Sea” and “sea” are the same key"):
        fragments_import(rows=[recorded("sea"), recorded("Sea")])

    assert list(Fragment.objects.values_list("key", flat=True)) == ["biscuit"]


def test_an_import_folds_its_keys_across_batches(monkeypatch):
    monkeypatch.setattr(gem_services, "IMPORT_BATCH", 1)

    fragments_import(rows=[recorded("Moon"), recorded("ΣΊΣΥΦΟΣ")])
    with pytest.raises(gem_services.FragmentRefused, match="as “Moon”"):
        fragments_import(rows=[recorded("sea"), recorded("MOON")])

    assert dict(Fragment.objects.values_list("key", "key_folded")) == {
        "Moon": "moon",
        "ΣΊΣΥΦΟΣ": "σίσυφοσ",
    }


def test_an_import_of_a_tier_past_the_cap_is_refused_in_words(settings):
    settings.FRAGMENT_TIER_MAX_TOKENS = 4000

    with pytest.raises(gem_services.FragmentRefused) as refused:
        fragments_import(rows=[recorded("inventory-dump", inventory="x" * 100_000)])

    assert str(refused.value).startswith(
        "The inventory of “inventory-dump” is about 25,000 tokens, past the 4,000 a tier may hold"
    )
    assert not Fragment.objects.exists()


def test_a_fold_keeps_both_fragments_triggers_and_refuses_tiers_past_the_cap(admin_user, settings):
    fragment("biscuit", recognition="a" * 8_000, triggers=["the cat", "Biscuit the cat"])
    fragment("Biscuit-2", recognition="b" * 8_000, triggers=["THE CAT", "kitten"])

    settings.FRAGMENT_TIER_MAX_TOKENS = 4000
    with pytest.raises(ReshapeError, match="The recognition of “biscuit” is about 4,0"):
        fragment_fold(source_key="Biscuit-2", into_key="biscuit", user_id=admin_user.pk)
    settings.FRAGMENT_TIER_MAX_TOKENS = 5000
    fragment_fold(source_key="Biscuit-2", into_key="biscuit", user_id=admin_user.pk)

    assert Fragment.objects.get().triggers == ["the cat", "Biscuit the cat", "kitten"]


def test_a_fold_whose_triggers_together_pass_the_most_is_refused(admin_user):
    fragment("moon", triggers=[f"moon word {n}" for n in range(TRIGGERS_MAX)])
    fragment("selene", triggers=["the pale one"])

    with pytest.raises(ReshapeError, match="more than the 50 a fragment has"):
        fragment_fold(source_key="selene", into_key="moon", user_id=admin_user.pk)
    assert Fragment.objects.count() == 2
