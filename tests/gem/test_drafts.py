"""Applying a draft (``gem.drafts``): every kind of change, the admin log, what a draft cannot
do, the one write of fragments, edges and sources that the Anvil's fragment form shares, and
that nothing else in the product writes them."""

import re
from pathlib import Path

import pytest
from django.contrib.admin.models import ADDITION, CHANGE, LogEntry
from django.contrib.auth import get_user_model
from django.db import transaction
from django.urls import reverse
from hypothesis import HealthCheck, given, settings

from events.models import Event
from events.selectors import source_events
from gem.draft import (
    Draft,
    DraftConflict,
    DraftDiff,
    DraftEdge,
    DraftError,
    DraftFragment,
    EdgeRelabel,
    SourceAdded,
    TierChange,
    draft_diff,
    draft_parse,
    draft_rebased,
    draft_render,
    draft_written,
    fragments_now,
)
from gem.drafts import diff_write, draft_apply
from gem.models import Fragment, FragmentEdge, FragmentSource
from tests.gem.test_draft_render import drafts

pytestmark = pytest.mark.django_db(databases=["default", "events"])


@pytest.fixture
def person(django_user_model):
    return django_user_model.objects.create_user(username="owner", password="x")


@pytest.fixture
def gem():
    fairy = Fragment.objects.create(key="fairy", ambient="A small light.", recognition="Old.")
    well = Fragment.objects.create(key="well", ambient="Deep.")
    moon = Fragment.objects.create(key="moon")
    FragmentEdge.objects.create(source=fairy, target=well, relation="lives in")
    FragmentEdge.objects.create(source=moon, target=fairy, relation="")
    return fairy, well, moon


def snapshot() -> tuple:
    return (
        list(
            Fragment.objects.values_list("key", "ambient", "recognition", "inventory", "triggers")
        ),
        list(FragmentEdge.objects.values_list("source_id", "target_id", "relation")),
        LogEntry.objects.count(),
    )


def test_it_applies_every_kind_of_change_and_logs_each_fragment(gem, person):
    draft = """# fairy

## recognition

She came with the first snow.

## edges

- → well: sleeps in
- → star

# star

## ambient

A far light.

## edges

- ← fairy
"""
    diff = draft_apply(draft, user=person, events_found=source_events)

    assert diff.fragments_created == ["star"]
    fairy = Fragment.objects.get(key="fairy")
    assert fairy.ambient == "A small light."  # absent tier: unchanged
    assert fairy.recognition == "She came with the first snow."
    assert Fragment.objects.get(key="star").ambient == "A far light."
    assert set(FragmentEdge.objects.values_list("source_id", "target_id", "relation")) == {
        ("fairy", "well", "sleeps in"),
        ("fairy", "star", ""),
    }
    entries = {e.object_id: e for e in LogEntry.objects.all()}
    assert entries["star"].action_flag == ADDITION
    assert "tiers ambient" in entries["star"].change_message
    assert entries["fairy"].action_flag == CHANGE
    message = entries["fairy"].change_message
    assert "tiers recognition" in message
    assert "edges added fairy → star" in message
    assert "removed moon → fairy" in message
    assert "relabelled fairy → well “lives in” → “sleeps in”" in message
    assert entries["well"].action_flag == CHANGE  # its edge was relabelled
    assert entries["moon"].action_flag == CHANGE  # its edge was removed
    assert entries["fairy"].user_id == person.pk


def test_it_clears_a_tier_that_is_present_but_empty(gem, person):
    draft_apply(
        "# fairy\n\n## recognition\n\n## inventory\n", user=person, events_found=source_events
    )

    fairy = Fragment.objects.get(key="fairy")
    assert (fairy.ambient, fairy.recognition, fairy.inventory) == ("A small light.", "", "")


def test_it_writes_a_drafts_triggers_clears_them_and_leaves_them_when_absent(gem, person):
    Fragment.objects.filter(key="well").update(triggers=["the old well"])
    Fragment.objects.filter(key="moon").update(triggers=["pale one"])
    draft = """# fairy

## triggers

- wisp
- " the little light"

# star

## ambient

A far light.

## triggers

- far light

# well

## triggers

# moon

## ambient

Pale.
"""
    diff = draft_apply(draft, user=person, events_found=source_events)

    assert dict(Fragment.objects.values_list("key", "triggers")) == {
        "fairy": ["wisp", " the little light"],
        "star": ["far light"],
        "well": [],
        "moon": ["pale one"],
    }
    assert [(c.key, c.tier) for c in diff.tiers_changed] == [
        ("fairy", "triggers"),
        ("star", "ambient"),
        ("star", "triggers"),
        ("well", "triggers"),
        ("moon", "ambient"),
    ]
    entries = {e.object_id: e.change_message for e in LogEntry.objects.all()}
    assert entries["fairy"] == "Changed from a draft: triggers"
    assert entries["star"] == "Created from a draft: tiers ambient; triggers"
    assert entries["moon"] == "Changed from a draft: tiers ambient"


def test_a_draft_written_against_other_triggers_is_refused_but_its_other_parts_apply(gem, person):
    Fragment.objects.filter(key="fairy").update(triggers=["wisp"])
    text = (
        _written("fairy")
        .replace("- wisp\n", "- wisp\n- glimmer\n")
        .replace("A small light.", "Blue.")
    )
    Fragment.objects.filter(key="fairy").update(triggers=["wisp", "will-o'-the-wisp"])
    before = snapshot()

    with pytest.raises(DraftConflict) as refused:
        draft_apply(text, user=person, events_found=source_events)

    (conflict,) = refused.value.check.conflicts
    assert (conflict.name, conflict.draft, conflict.now) == (
        "fairy:triggers",
        "- wisp\n- glimmer",
        "- wisp\n- will-o'-the-wisp",
    )
    assert snapshot() == before
    draft_apply(text, user=person, events_found=source_events, parts={"fairy:ambient"})
    fairy = Fragment.objects.get(key="fairy")
    assert (fairy.ambient, fairy.triggers) == ("Blue.", ["wisp", "will-o'-the-wisp"])


def test_a_bad_draft_changes_nothing_and_says_where(gem, person):
    before = snapshot()
    draft = "# fairy\n\n## recognition\n\nNew text.\n\n## edges\n\n- → nowhere: lost\n"

    with pytest.raises(DraftError) as caught:
        draft_apply(draft, user=person, events_found=source_events)

    assert caught.value.line == 9
    assert "“nowhere” is not a fragment" in str(caught.value)
    assert snapshot() == before


def test_an_unreadable_draft_changes_nothing(gem, person):
    before = snapshot()

    with pytest.raises(DraftError) as caught:
        draft_apply(
            "# fairy\n\n## recognition\n\nfine\n\n## mood\n\nsad\n",
            user=person,
            events_found=source_events,
        )

    assert caught.value.line == 7
    assert snapshot() == before


def test_a_failure_while_writing_rolls_everything_back(gem, person, monkeypatch):
    before = snapshot()

    def broken(*args, **kwargs):
        raise RuntimeError("the disk is full")

    monkeypatch.setattr(FragmentEdge.objects, "bulk_create", broken)
    with pytest.raises(RuntimeError):
        draft_apply(
            "# star\n\n## ambient\n\nFar.\n\n## edges\n\n- → moon\n",
            user=person,
            events_found=source_events,
        )

    assert snapshot() == before


def test_it_records_a_drafts_sources_and_logs_them(gem, person):
    said = [Event.objects.create(content=f"about the fairy {n}", actor="luna") for n in (1, 2)]
    FragmentSource.objects.create(fragment_id="fairy", event_id=said[0].pk)
    draft = f"# fairy\n\n## sources\n\n- events {said[0].pk}, {said[1].pk}\n\n# star\n\n" + (
        f"## ambient\n\nFar.\n\n## sources\n\n- event {said[1].pk}\n"
    )

    diff = draft_apply(draft, user=person, events_found=source_events)

    assert sorted(FragmentSource.objects.values_list("fragment_id", "event_id")) == [
        ("fairy", said[0].pk),
        ("fairy", said[1].pk),
        ("star", said[1].pk),
    ]
    assert LogEntry.objects.get(object_id="fairy").change_message == (
        f"Changed from a draft: sources added events {said[1].pk}"
    )
    assert (
        f"sources added events {said[1].pk}"
        in LogEntry.objects.get(object_id="star").change_message
    )
    assert len(diff.sources_added) == 2
    assert draft_diff(draft_parse(draft), events_found=source_events).is_empty


def test_a_source_that_is_not_an_event_is_refused_and_changes_nothing(gem, person):
    said = Event.objects.create(content="the fairy", actor="luna")
    before = snapshot()

    with pytest.raises(DraftError) as caught:
        draft_apply(
            f"# fairy\n\n## ambient\n\nNew.\n\n## sources\n\n- events {said.pk}\n- event 404\n",
            user=person,
            events_found=source_events,
        )

    assert caught.value.line == 10
    assert "event 404 is not in the event log" in str(caught.value)
    assert snapshot() == before and not FragmentSource.objects.exists()


def test_a_draft_the_gem_already_holds_changes_and_logs_nothing(gem, person):
    before = snapshot()

    diff = draft_apply(
        "# fairy\n\n## ambient\n\nA small light.\n", user=person, events_found=source_events
    )

    assert diff.is_empty
    assert snapshot() == before


@given(draft=drafts())
@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_draft_applied_reads_back_as_no_change(draft):
    """Any draft applied leaves the Gem holding exactly it: read again, it is no change."""
    for event_id in (3, 7):  # the sources the generated drafts list
        if not Event.objects.filter(pk=event_id).exists():
            Event.objects.create(pk=event_id, content="said", actor="luna")
    with transaction.atomic():
        person = get_user_model().objects.create_user(username="owner")
        outside = {e.source for f in draft.fragments for e in f.edges or []} | {
            e.target for f in draft.fragments for e in f.edges or []
        }
        Fragment.objects.bulk_create(
            Fragment(key=k) for k in outside - {f.key for f in draft.fragments}
        )
        text = draft_render(draft)
        draft_apply(text, user=person, events_found=source_events)
        assert draft_diff(draft_parse(text), events_found=source_events).is_empty
        for fragment in draft.fragments:
            held = Fragment.objects.get(key=fragment.key)
            assert {tier: getattr(held, tier) for tier in fragment.tiers} == fragment.tiers
            if fragment.triggers is not None:
                assert held.triggers == fragment.triggers
            if fragment.edges is not None:
                touching = FragmentEdge.objects.filter(source=held) | FragmentEdge.objects.filter(
                    target=held
                )
                assert set(touching.values_list("source_id", "target_id", "relation")) == {
                    (e.source, e.target, e.relation) for e in fragment.edges
                }
        transaction.set_rollback(True)


# --- The one write --------------------------------------------------------------------------


def test_it_writes_a_diff_of_tiers_edges_and_sources_removed_as_well_as_added(gem):
    said = Event.objects.create(actor="luna", content="A light by the well.")
    FragmentSource.objects.create(fragment_id="fairy", event_id=said.pk + 1)
    diff_write(
        DraftDiff(
            fragments_created=["star"],
            tiers_changed=[
                TierChange("star", "ambient", "", "Far."),
                TierChange("fairy", "inventory", "", "A lantern."),
            ],
            edges_removed=[DraftEdge("moon", "fairy")],
            edges_added=[DraftEdge("star", "moon", "above")],
            edges_relabelled=[EdgeRelabel("fairy", "well", "lives in", "sleeps in")],
            sources_added=[SourceAdded("fairy", said.pk)],
            sources_removed=[SourceAdded("fairy", said.pk + 1)],
        )
    )
    assert Fragment.objects.get(key="star").ambient == "Far."
    assert Fragment.objects.get(key="fairy").inventory == "A lantern."
    assert set(FragmentEdge.objects.values_list("source_id", "target_id", "relation")) == {
        ("fairy", "well", "sleeps in"),
        ("star", "moon", "above"),
    }
    assert list(FragmentSource.objects.values_list("fragment_id", "event_id")) == [
        ("fairy", said.pk)
    ]


def test_the_fragment_form_and_its_inlines_write_through_the_one_write(
    admin_client, gem, monkeypatch
):
    import anvil.fragments

    written: list[DraftDiff] = []
    monkeypatch.setattr(
        anvil.fragments, "diff_write", lambda diff: (written.append(diff), diff_write(diff))
    )
    FragmentSource.objects.create(fragment_id="fairy", event_id=7)
    edge = FragmentEdge.objects.get(source="fairy")
    source = FragmentSource.objects.get()
    response = admin_client.post(
        reverse("admin:gem_fragment_change", args=["fairy"]),
        {
            "ambient": "A small light.",
            "recognition": "Older.",
            "inventory": "",
            "edges_out-TOTAL_FORMS": "1",
            "edges_out-INITIAL_FORMS": "1",
            "edges_out-0-id": edge.pk,
            "edges_out-0-source": "fairy",
            "edges_out-0-target": "moon",
            "edges_out-0-relation": "sees",
            "edges_in-TOTAL_FORMS": "0",
            "edges_in-INITIAL_FORMS": "0",
            "sources-TOTAL_FORMS": "1",
            "sources-INITIAL_FORMS": "1",
            "sources-0-id": source.pk,
            "sources-0-fragment": "fairy",
            "sources-0-event_id": "7",
            "sources-0-DELETE": "on",
        },
    )
    assert response.status_code == 302, response.context["errors"]
    [diff] = written
    assert diff.tiers_changed == [TierChange("fairy", "recognition", "Old.", "Older.")]
    assert diff.edges_removed == [DraftEdge("fairy", "well", "lives in")]
    assert diff.edges_added == [DraftEdge("fairy", "moon", "sees")]
    assert diff.sources_removed == [SourceAdded("fairy", 7)]
    assert Fragment.objects.get(key="fairy").recognition == "Older."
    assert set(FragmentEdge.objects.values_list("source_id", "target_id", "relation")) == {
        ("fairy", "moon", "sees"),
        ("moon", "fairy", ""),
    }
    assert not FragmentSource.objects.exists()
    [entry] = LogEntry.objects.filter(object_id="fairy")
    assert "Deleted fragment source “fairy ← event 7”" in entry.get_change_message()


def test_a_fragment_added_in_the_anvil_is_written_through_the_one_write(admin_client, gem):
    response = admin_client.post(
        reverse("admin:gem_fragment_add"),
        {
            "key": "star",
            "ambient": "Far.",
            "recognition": "",
            "inventory": "",
            "edges_out-TOTAL_FORMS": "1",
            "edges_out-INITIAL_FORMS": "0",
            "edges_out-0-target": "moon",
            "edges_out-0-relation": "above",
            "edges_in-TOTAL_FORMS": "0",
            "edges_in-INITIAL_FORMS": "0",
            "sources-TOTAL_FORMS": "0",
            "sources-INITIAL_FORMS": "0",
        },
    )
    assert response.status_code == 302, response.context["errors"]
    assert Fragment.objects.get(key="star").ambient == "Far."
    assert FragmentEdge.objects.filter(source="star", target="moon", relation="above").exists()
    assert LogEntry.objects.get(object_id="star").action_flag == ADDITION


# Product modules allowed to write fragments, edges and sources themselves: the Gem's services.
# A restore copies whole stores and is the one exception.
WRITERS_ALLOWED = {
    "gem/services.py",
    "gem/drafts.py",
    "transfer/restore.py",  # the restore's store copy
}
APPS = ("silentstar", "events", "heart", "gem", "mirror", "lens", "ledger", "compass", "loom")
APPS += ("transfer", "anvil")
MANAGER = re.compile(r"\b(?:Fragment|FragmentEdge|FragmentSource)\.objects\b")
MANAGER_WRITE = re.compile(
    r"\.(?:create|bulk_create|get_or_create|update_or_create|bulk_update|update|delete)\("
)
ROW_WRITE = re.compile(r"\b(?:fragment|edge|source)\w*\.(?:save|delete)\(", re.IGNORECASE)


def _statement(text: str, start: int) -> str:
    """From ``start`` to the end of its statement: the first line break outside brackets."""
    depth = 0
    for index in range(start, len(text)):
        if text[index] in "([{":
            depth += 1
        elif text[index] in ")]}":
            depth -= 1
        elif text[index] == "\n" and depth <= 0:
            return text[start:index]
    return text[start:]


def fragment_writes(root: Path) -> list[str]:
    """Where a product module outside the allowed ones writes a fragment, edge or source."""
    found = []
    for app in APPS:
        for path in sorted((root / app).rglob("*.py")):
            name = path.relative_to(root).as_posix()
            if "migrations" in path.parts or name in WRITERS_ALLOWED:
                continue
            text = path.read_text(encoding="utf-8")
            starts = [
                m.start()
                for m in MANAGER.finditer(text)
                if MANAGER_WRITE.search(_statement(text, m.start()))
            ]
            starts += [m.start() for m in ROW_WRITE.finditer(text)]
            found += [f"{name}:{text.count(chr(10), 0, start) + 1}" for start in sorted(starts)]
    return found


@pytest.mark.store_free
def test_nothing_but_the_gems_services_writes_fragments_edges_or_sources(tmp_path):
    root = Path(__file__).resolve().parents[2]
    assert fragment_writes(root) == []
    planted = tmp_path / "anvil" / "planted.py"
    planted.parent.mkdir()
    planted.write_text(
        "FragmentEdge.objects.filter(\n    source='fairy'\n).delete()\nedge.save()\n"
    )
    assert fragment_writes(tmp_path) == ["anvil/planted.py:1", "anvil/planted.py:4"]


# --- What a draft was written against ---------------------------------------------------------


def _written(*keys: str) -> str:
    """The fragments as the Gem holds them, written as a draft saying so (what the Lens writes)."""
    return draft_render(draft_written(Draft(fragments=list(fragments_now(keys).values()))))


def test_a_draft_over_a_fragment_changed_since_is_refused_and_changes_nothing(gem, person):
    text = _written("fairy").replace("A small light.", "A small blue light.")
    FragmentEdge.objects.filter(source_id="moon").update(relation="watches")  # edges only
    before = snapshot()
    with pytest.raises(DraftConflict) as refused:
        draft_apply(text, user=person, events_found=source_events)
    assert [part.name for part in refused.value.check.conflicts] == ["fairy:edges"]
    assert "“fairy” changed since this draft was written (conflicting: edges)" in str(refused.value)
    assert snapshot() == before


def test_a_draft_of_a_new_fragment_is_refused_once_the_fragment_was_made_meanwhile(gem, person):
    new = DraftFragment(key="comet", tiers={"recognition": "A tail of ice."})
    text = draft_render(draft_written(Draft(fragments=[new]), base=[]))  # the Gem had no comet
    Fragment.objects.create(key="comet", recognition="Seen from the pier.")
    before = snapshot()

    with pytest.raises(DraftConflict) as refused:
        draft_apply(text, user=person, events_found=source_events)

    assert "“comet” changed since this draft was written (conflicting: recognition)" in str(
        refused.value
    )
    assert snapshot() == before


def test_a_draft_is_applied_part_by_part_but_never_a_conflicting_part(gem, person):
    text = _written("fairy").replace("A small light.", "Blue.").replace("Old.", "New.")
    Fragment.objects.filter(key="fairy").update(recognition="Changed meanwhile.")
    with pytest.raises(DraftError, match="fairy:recognition changed since"):
        draft_apply(
            text,
            user=person,
            events_found=source_events,
            parts={"fairy:ambient", "fairy:recognition"},
        )
    diff = draft_apply(text, user=person, events_found=source_events, parts={"fairy:ambient"})
    assert [(c.tier, c.new) for c in diff.tiers_changed] == [("ambient", "Blue.")]
    fairy = Fragment.objects.get(key="fairy")
    assert (fairy.ambient, fairy.recognition) == ("Blue.", "Changed meanwhile.")
    with pytest.raises(DraftError, match="Choose at least one part"):
        draft_apply(text, user=person, events_found=source_events, parts=set())


def test_a_draft_without_a_base_is_applied_and_says_so(gem, person):
    diff = draft_apply("# fairy\n\n## ambient\n\nBlue.\n", user=person, events_found=source_events)
    assert diff.unchecked == ["fairy"]
    assert Fragment.objects.get(key="fairy").ambient == "Blue."


def test_a_draft_saved_against_todays_text_is_applied(gem, person):
    text = _written("fairy").replace("A small light.", "Blue.")
    Fragment.objects.filter(key="fairy").update(ambient="Hums.")
    rebased = draft_rebased(text)
    assert "Blue." in rebased and rebased != text
    diff = draft_apply(rebased, user=person, events_found=source_events)
    assert (diff.unchecked, Fragment.objects.get(key="fairy").ambient) == ([], "Blue.")


def test_a_draft_making_a_case_twin_is_refused_in_words_and_changes_nothing(person):
    diff_write(DraftDiff(fragments_created=["biscuit"]))
    before = snapshot()

    with pytest.raises(DraftError) as refused:
        draft_apply(
            "# Biscuit\n\n## ambient\n\nThe cat.\n", user=person, events_found=source_events
        )

    assert str(refused.value) == "“Biscuit” is already a fragment, as “biscuit”."
    assert snapshot() == before
    assert Fragment.objects.get().key_folded == "biscuit"


def test_a_draft_with_a_tier_past_the_cap_is_refused_in_words(gem, person, settings):
    settings.FRAGMENT_TIER_MAX_TOKENS = 4000
    before = snapshot()
    draft = "# fairy\n\n## inventory\n\n" + "word " * 20_000 + "\n"

    with pytest.raises(DraftError, match="The inventory of “fairy” is about 25,000 tokens"):
        draft_apply(draft, user=person, events_found=source_events)

    assert snapshot() == before
