"""Other companions' memory brought in: a plan that writes nothing, an import that writes what
it said once, refusals before any write, and the way back out."""

import json
from datetime import UTC, datetime

import pytest
from django.contrib.auth import get_user_model

from events.models import Event, EventTag
from events.render import message_display
from events.selectors import source_events
from gem.draft import draft_parse
from gem.drafts import draft_apply
from gem.models import AmbientProse, Fragment, FragmentEdge, WorkingMemory
from gem.selectors import wake_text_current
from gem.waking import TRIGGERS_MAX
from mirror.models import Proposer, TagSuggestion
from mirror.services import suggestion_promote
from transfer.bridges import (
    bridge_import,
    bridge_plan,
    bundle_read,
    entries_left_out_said,
    fragments_exported,
    speakers_read,
    text_added,
)
from transfer.bundle import BridgeError
from transfer.formats.sillytavern import lorebook_dump
from transfer.models import ImportedMemory, ImportedMessage, ImportedProposal, ImportRun

pytestmark = pytest.mark.django_db(databases="__all__")

LOREBOOK = {
    "name": "Harbour",
    "entries": {
        "0": {
            "uid": 0,
            "key": ["harbour", "docks"],
            "keysecondary": [],
            "comment": "Old Harbour",
            "content": "Where {{char}} first met {{user}}. Ships from the Lighthouse pass by.",
            "constant": True,
            "disable": False,
            "ignoreBudget": True,
            "triggers": ["normal"],
        },
        "1": {
            "uid": 1,
            "key": ["lighthouse"],
            "keysecondary": ["beacon"],
            "comment": "Lighthouse",
            "content": "A white tower.\n\nIts keeper sings at night.",
            "constant": False,
            "disable": False,
        },
    },
}


def chat_lines(count=4, *, character="Seraphina"):
    header = {
        "user_name": "Luna",
        "character_name": character,
        "create_date": "2025-05-16@13h45m07s",
        "chat_metadata": {},
    }
    lines = [header]
    for n in range(count):
        user = n % 2 == 0
        message = {
            "name": "Luna" if user else character,
            "is_user": user,
            "is_system": False,
            "send_date": f"2025-05-16T13:{n:02d}:00Z",
            "mes": f"message {n}",
            "extra": {"note": n},
        }
        if not user:
            message |= {"swipes": [f"other {n}", f"message {n}"], "swipe_id": 1}
        lines.append(message)
    return "\n".join(json.dumps(line) for line in lines).encode()


MEM0 = {
    "results": [
        {
            "id": "m-1",
            "memory": "Prefers green tea",
            "hash": "h1",
            "created_at": "2025-01-02T10:00:00Z",
            "updated_at": None,
            "user_id": "luna",
            "metadata": {"source": "chat"},
        },
        {
            "id": "m-2",
            "memory": "Works as a nurse",
            "hash": "h2",
            "created_at": "2025-01-03T10:00:00Z",
            "updated_at": None,
            "user_id": "luna",
            "metadata": None,
        },
    ]
}


def planned(format, data, *, speakers=None, file_name="file"):
    bundle = bundle_read(format=format, data=data)
    return bridge_plan(bundle, file_name=file_name, format=format, speakers=speakers)


def imported(format, data, **options):
    plan = planned(format, data, speakers=options.pop("speakers", None))
    return bridge_import(plan, file_sha256="0" * 64, **options)


def test_a_lorebook_is_proposed_as_a_draft_and_the_gem_is_untouched():
    plan = planned("sillytavern", json.dumps(LOREBOOK).encode())

    assert [f.key for f in plan.fragments] == ["harbour", "lighthouse"]
    diff = plan.draft_diff
    assert diff.fragments_created == ["harbour", "lighthouse"]
    assert "Where Seraphina first met" not in plan.draft_text  # no card: the companion's name
    assert "Where claude first met hasuki." in plan.draft_text
    assert "- harbour ← entries.0\n  - entries.0: its comment: “Old Harbour”" in plan.draft_text
    assert "## triggers\n\n- docks\n" in plan.draft_text
    assert [(e.source, e.target) for e in diff.edges_added] == [("harbour", "lighthouse")]
    report = bridge_import(plan, file_sha256="0" * 64)

    assert report.counts["drafts"] == 1
    proposal = ImportedProposal.objects.get(kind="draft")
    assert proposal.text == plan.draft_text
    assert proposal.kept["entries"]["entries.0"]["ignoreBudget"] is True
    assert proposal.kept["entries"]["entries.0"]["triggers"] == ["normal"]
    assert proposal.kept["entries"]["entries.0"]["comment"] == "Old Harbour"
    assert proposal.kept["entries"]["entries.1"]["secondary_keys"] == ["beacon"]
    assert not Fragment.objects.exists()


def test_an_applied_draft_gives_the_fragments_their_text_and_their_keys_as_triggers():
    imported("sillytavern", json.dumps(LOREBOOK).encode())
    user = get_user_model().objects.create_superuser("anvil", password="x")

    draft = ImportedProposal.objects.get(kind="draft").text
    draft_apply(draft, user=user, events_found=source_events)

    harbour = Fragment.objects.get(key="harbour")
    said = "Where claude first met hasuki. Ships from the Lighthouse pass by."
    assert (harbour.recognition, harbour.ambient) == (said, said)  # recall and waking read it
    assert harbour.triggers == ["docks"]
    lighthouse = Fragment.objects.get(key="lighthouse")
    assert lighthouse.recognition == "A white tower."  # no "Keys:" line, no secondary key
    assert lighthouse.inventory == "A white tower.\n\nIts keeper sings at night."
    assert lighthouse.triggers == []
    assert FragmentEdge.objects.filter(source="harbour", target="lighthouse").exists()


def test_a_second_import_adds_nothing_even_once_the_draft_is_applied():
    data = json.dumps(LOREBOOK).encode()
    imported("sillytavern", data)
    user = get_user_model().objects.create_superuser("anvil", password="x")
    draft = ImportedProposal.objects.get(kind="draft").text
    draft_apply(draft, user=user, events_found=source_events)

    plan = planned("sillytavern", data)
    assert plan.draft_here and plan.prose_here and plan.is_empty
    assert plan.draft_diff.is_empty
    report = bridge_import(plan, file_sha256="0" * 64)

    assert report.counts["drafts"] == 0 and report.counts["proposals_here"] == 2
    assert ImportedProposal.objects.count() == 2


def test_a_chat_becomes_events_at_their_times_with_the_chosen_swipe_and_the_others_kept():
    report = imported("sillytavern", chat_lines(), speakers={"Luna": "luna", "Seraphina": "claude"})

    assert report.counts["events"] == 4
    events = list(Event.objects.order_by("pk"))
    assert [e.content for e in events] == [
        "message 0",
        "<say>message 1</say>",
        "message 2",
        "<say>message 3</say>",
    ]
    assert [e.actor for e in events] == ["luna", "claude", "luna", "claude"]
    assert events[1].ts == datetime(2025, 5, 16, 13, 1, tzinfo=UTC)
    marker = ImportedMessage.objects.get(event=events[1])
    assert marker.kept["swipes"] == ["other 1", "message 1"]
    assert marker.kept["extra"] == {"note": 1}
    assert marker.speaker == "Seraphina"
    run = ImportRun.objects.get()
    assert run.finished_at is not None and run.counts["events"] == 4


def test_a_speaker_with_an_identitys_name_needs_no_mapping_and_tags_are_logged():
    data = chat_lines(2, character="Claude")
    lines = data.decode().split("\n")
    first = json.loads(lines[1]) | {"mes": "<say>hello</say>"}
    data = "\n".join([lines[0], json.dumps(first), lines[2]]).encode()

    imported("sillytavern", data, speakers={"Luna": "luna"})

    assert list(Event.objects.values_list("actor", flat=True)) == ["luna", "claude"]
    assert list(EventTag.objects.values_list("tag", flat=True)) == ["say", "say"]


def test_the_companions_words_are_shown_on_the_chat_page_whole():
    data = chat_lines(2)
    lines = data.decode().split("\n")
    reply = json.loads(lines[2]) | {"mes": "I wrote </SAY> once, *smiling*."}
    data = "\n".join([lines[0], lines[1], json.dumps(reply)]).encode()

    imported("sillytavern", data, speakers={"Seraphina": "claude"})

    event = Event.objects.get(actor="claude")
    assert event.content == "<say>I wrote </ say> once, *smiling*.</say>"
    shown = message_display(
        event_id=event.pk, content=event.content, actor="claude", sides={"claude": "companion"}
    )
    assert [segment.text for segment in shown.segments] == ["I wrote </ say> once, *smiling*."]


def test_an_unknown_speaker_is_asked_for_and_nothing_is_written():
    plan = planned("sillytavern", chat_lines())
    assert [s.name for s in plan.unknown_speakers] == ["Seraphina"]  # Luna is an identity

    with pytest.raises(BridgeError, match="Who is “Seraphina”"):
        bridge_import(plan, file_sha256="0" * 64)

    assert not Event.objects.exists() and not ImportRun.objects.exists()


def test_a_speaker_mapped_to_the_wrong_side_or_nobody_is_refused():
    plan = planned("sillytavern", chat_lines(), speakers={"Luna": "claude", "Nobody": "luna"})

    with pytest.raises(BridgeError) as refused:
        bridge_import(plan, file_sha256="0" * 64)

    assert "Luna speaks on the user’s side" in str(refused.value)
    assert "--as Nobody: nobody of that name speaks" in str(refused.value)
    assert not Event.objects.exists()


def test_mapping_pairs_are_read_and_a_bad_one_is_named():
    assert speakers_read(["Seraphina=claude", "A = B=luna"]) == {
        "Seraphina": "claude",
        "A = B": "luna",
    }
    with pytest.raises(BridgeError, match="“Seraphina”"):
        speakers_read(["Seraphina"])


def test_a_chat_stopped_part_way_is_finished_by_the_next_run_and_then_adds_nothing():
    data = chat_lines(6)
    speakers = {"Luna": "luna", "Seraphina": "claude"}

    def stop(done, total):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        imported("sillytavern", data, speakers=speakers, batch=2, progress=stop)
    assert Event.objects.count() == 2
    assert ImportRun.objects.get().finished_at is None

    report = imported("sillytavern", data, speakers=speakers, batch=2)
    assert report.counts["events"] == 4 and report.counts["events_here"] == 2
    again = imported("sillytavern", data, speakers=speakers)
    assert again.counts["events"] == 0 and again.counts["events_here"] == 6
    assert Event.objects.count() == 6 == ImportedMessage.objects.count()


def test_the_preview_counts_turns_and_what_compressing_them_would_cost():
    plan = planned("sillytavern", chat_lines(6), speakers={"Luna": "luna", "Seraphina": "claude"})

    assert len(plan.turns) == 3
    assert plan.turns[0] == "#0 luna: message 0\n#0 claude (say): message 1"
    estimate = plan.estimate
    assert estimate.turns == 3 and estimate.chunks == 1
    assert 0 < estimate.cost_about < estimate.cost_most


def test_memories_are_staged_as_typed_suggestions_with_their_times_once():
    report = imported("mem0", json.dumps(MEM0).encode())

    assert report.counts["suggestions"] == 2
    tea, nurse = TagSuggestion.objects.order_by("created_at")
    assert (tea.type, tea.proposer, tea.content) == ("pin", Proposer.IMPORT, "Prefers green tea")
    assert tea.created_at == datetime(2025, 1, 2, 10, tzinfo=UTC)
    assert nurse.type == "desc"
    assert ImportedMemory.objects.get(suggestion=tea).kept["metadata"] == {"source": "chat"}
    assert not WorkingMemory.objects.exists()

    again = imported("mem0", json.dumps(MEM0).encode())
    assert again.counts["suggestions"] == 0 and again.counts["suggestions_here"] == 2
    assert TagSuggestion.objects.count() == 2


def test_an_imported_memory_is_promoted_like_any_suggestion():
    imported("mem0", json.dumps(MEM0).encode())
    user = get_user_model().objects.create_superuser("anvil", password="x")
    tea = TagSuggestion.objects.get(content="Prefers green tea")

    item = suggestion_promote(suggestion_id=tea.pk, user_id=user.pk)

    assert (item.type, item.content, item.actor) == ("pin", "Prefers green tea", "import")


def test_a_card_proposes_a_wake_text_after_the_one_in_use():
    card = {
        "spec": "chara_card_v2",
        "spec_version": "2.0",
        "data": {
            "name": "Seraphina",
            "description": "{{char}} is a guardian of the forest.",
            "personality": "Kind, watchful.",
            "scenario": "",
            "first_mes": "Hello.",
            "mes_example": "",
            "creator_notes": "",
            "system_prompt": "",
            "post_history_instructions": "",
            "alternate_greetings": [],
            "tags": ["fantasy"],
            "creator": "someone",
            "character_version": "1",
            "extensions": {},
        },
    }
    plan = planned("card", json.dumps(card).encode())

    assert plan.wake_section.startswith("# Who you are: Seraphina")
    assert "Seraphina is a guardian of the forest." in plan.wake_section
    assert "## Personality\n\nKind, watchful." in plan.wake_section
    proposed = text_added(wake_text_current("wake"), plan.wake_section)
    assert proposed.startswith("# Waking up") and proposed.endswith(plan.wake_section + "\n")
    bridge_import(plan, file_sha256="0" * 64)
    proposal = ImportedProposal.objects.get(kind="wake")
    assert proposal.kept["greetings"] == {"first_mes": "Hello."}
    assert text_added(wake_text_current("wake"), proposal.text) == proposed


def test_a_malformed_file_is_refused_whole_before_anything_is_written():
    broken = json.loads(json.dumps(LOREBOOK))
    broken["entries"]["1"]["content"] = 7
    with pytest.raises(BridgeError, match=r"entries\.1\.content"):
        planned("sillytavern", json.dumps(broken).encode())
    assert not ImportRun.objects.exists()


def test_a_lorebook_exported_and_imported_again_gives_the_same_fragments():
    Fragment.objects.create(
        key="fairy",
        ambient="A small light.",
        recognition="Keys: sprite",
        triggers=["wisp", "the little light", "Fairy"],
    )
    Fragment.objects.create(key="well", recognition="Deep.", inventory="Deep.\n\n## Not a tier")
    FragmentEdge.objects.create(source_id="fairy", target_id="well", relation="lives in")
    fields = ("key", "ambient", "recognition", "inventory", "triggers")
    before = list(Fragment.objects.order_by("key").values_list(*fields))
    data = lorebook_dump(fragments_exported(), name="claude")
    assert planned("sillytavern", data).draft_diff.is_empty

    Fragment.objects.all().delete()
    imported("sillytavern", data)
    user = get_user_model().objects.create_superuser("anvil", password="x")
    draft_apply(ImportedProposal.objects.get().text, user=user, events_found=source_events)

    assert list(Fragment.objects.order_by("key").values_list(*fields)) == before
    assert list(FragmentEdge.objects.values_list("source", "target", "relation")) == [
        ("fairy", "well", "lives in")
    ]


# --- Imports that keep their meaning -------------------------------------------------------------


def test_a_constant_entry_proposes_an_ambient_prose_addition_and_writes_none():
    AmbientProse.objects.create(content="She keeps [tea] close.")
    plan = planned("sillytavern", json.dumps(LOREBOOK).encode())

    assert (
        plan.prose_section == "Always in mind from the SillyTavern lorebook “Harbour”: [harbour]."
    )
    assert plan.prose_base == "She keeps [tea] close."
    report = bridge_import(plan, file_sha256="0" * 64)

    assert report.counts["prose_additions"] == 1
    proposal = ImportedProposal.objects.get(kind="prose")
    assert (proposal.text, proposal.base) == (plan.prose_section, plan.prose_base)
    assert list(AmbientProse.objects.values_list("content", flat=True)) == [
        "She keeps [tea] close."
    ]


def test_no_ambient_prose_is_proposed_for_a_key_it_names_already():
    AmbientProse.objects.create(content="By the [harbour].")
    assert planned("sillytavern", json.dumps(LOREBOOK).encode()).prose_section == ""


def test_a_disabled_entry_is_left_out_and_said_so_and_kept_on_the_proposal():
    book = json.loads(json.dumps(LOREBOOK))
    book["entries"]["2"] = {
        "uid": 2,
        "key": ["Old Grey", "the seal"],
        "comment": "disabled-entry",
        "content": "A seal on the rocks.",
        "disable": True,
    }
    plan = planned("sillytavern", json.dumps(book).encode())

    assert [f.key for f in plan.fragments] == ["harbour", "lighthouse"]
    assert [e.where for e in plan.left_out] == ["entries.2"]
    said = (
        "Left out: entries.2 (“disabled-entry”), disabled there: a fragment here has no off "
        "switch, and naming its key “Old Grey” would wake it."
    )
    assert said in plan.draft_text
    bridge_import(plan, file_sha256="0" * 64)
    kept = ImportedProposal.objects.get(kind="draft").kept["left_out"]["entries.2"]
    assert kept["content"] == "A seal on the rocks."
    assert (kept["keys"], kept["comment"]) == (["Old Grey", "the seal"], "disabled-entry")


def test_an_entry_left_out_is_said_in_a_short_line_and_kept_whole():
    long = "a note that goes on " * 10_000
    entry = {"key": ["seal " * 10_000], "comment": long, "content": "Grey.", "disable": True}
    book = {"entries": {"0": {"key": ["lamp"], "content": "Lit."}, "1": entry}}
    plan = planned("sillytavern", json.dumps(book).encode())

    (said,) = entries_left_out_said(plan.left_out)
    assert said.startswith("entries.1 (“a note that goes on a note") and len(said) < 300
    assert f"“{'seal ' * 11}seal…”" in said
    bridge_import(plan, file_sha256="0" * 64)
    assert (
        ImportedProposal.objects.get(kind="draft").kept["left_out"]["entries.1"]["comment"] == long
    )


def test_an_entry_keyed_by_its_keys_not_by_a_disabled_entry_comment():
    book = {
        "entries": {
            "0": {
                "key": ["Old Grey", "the seal"],
                "comment": "disabled-entry",
                "content": "A seal.",
            }
        }
    }
    plan = planned("sillytavern", json.dumps(book).encode())
    (fragment,) = plan.fragments
    assert (fragment.key, fragment.triggers) == ("old-grey", ["the seal"])


def test_biscuit_the_cat_beside_biscuit_is_a_fold_into_it_applied_once():
    Fragment.objects.create(key="biscuit", recognition="Luna's cat.", triggers=["kitty"])
    book = {
        "entries": {
            "0": {
                "key": ["Biscuit the cat", "Biscuit"],
                "comment": "biscuit-the-cat",
                "content": "A ginger cat who sleeps on the stairs.",
            }
        }
    }
    data = json.dumps(book).encode()
    plan = planned("sillytavern", data)

    assert plan.draft_diff.fragments_created == []
    assert plan.draft_diff.fragments_changed() == ["biscuit"]
    imported("sillytavern", data)
    user = get_user_model().objects.create_superuser("anvil", password="x")
    proposal = ImportedProposal.objects.get(kind="draft")
    draft_apply(proposal.text, user=user, events_found=source_events, base=proposal.base)

    biscuit = Fragment.objects.get(key="biscuit")
    assert biscuit.recognition == "Luna's cat.\n\nA ginger cat who sleeps on the stairs."
    assert biscuit.triggers == ["kitty", "Biscuit the cat"]
    assert list(Fragment.objects.values_list("key", flat=True)) == ["biscuit"]
    again = planned("sillytavern", data)
    assert again.draft_here and again.draft_diff.is_empty


def test_a_fold_adds_triggers_up_to_the_most_a_fragment_has_and_says_the_rest():
    held = [f"name {n}" for n in range(TRIGGERS_MAX - 1)]
    Fragment.objects.create(key="hub", recognition="A wheel.", triggers=held)
    book = {"entries": {"0": {"key": ["Hub", "name 3", "spoke", "rim"], "content": "Turns."}}}
    plan = planned("sillytavern", json.dumps(book).encode())

    (section,) = draft_parse(plan.draft_text).fragments
    assert section.triggers == [*held, "spoke"]
    assert "“rim” and the keys after it are not triggers: a fragment has at most 50" in (
        plan.draft_text
    )


def test_a_cards_greetings_are_kept_on_its_proposals_and_shown():
    card = {
        "spec": "chara_card_v2",
        "spec_version": "2.0",
        "data": {
            "name": "Seraphina",
            "description": "A guardian.",
            "first_mes": "Welcome, {{user}}.",
            "alternate_greetings": ["Back again?", "Hello, traveller."],
            "mes_example": "<START>\n{{char}}: Quiet now.",
        },
    }
    plan = planned("card", json.dumps(card).encode())
    greetings = {
        "first_mes": "Welcome, {{user}}.",
        "alternate_greetings": ["Back again?", "Hello, traveller."],
        "mes_example": "<START>\n{{char}}: Quiet now.",
    }
    assert plan.bundle.greetings == greetings
    assert "first_mes" not in plan.bundle.kept

    bridge_import(plan, file_sha256="0" * 64)
    assert ImportedProposal.objects.get(kind="wake").kept["greetings"] == greetings


@pytest.mark.fresh_install
def test_a_cards_first_message_is_proposed_as_the_greeting_the_set_up_opens_with(
    admin_client, admin_user
):
    from django.urls import reverse

    from anvil.proposals import proposal_apply
    from tests.heart.test_first_run import first_rows

    card = {
        "spec": "chara_card_v2",
        "spec_version": "2.0",
        "data": {
            "name": "Seraphina",
            "description": "A guardian.",
            "first_mes": "*{{char}} looks up from the fire.* Welcome, {{user}}.",
        },
    }
    plan = planned("card", json.dumps(card).encode())
    assert plan.greeting == "*{name} looks up from the fire.* Welcome, {you}."
    report = bridge_import(plan, file_sha256="0" * 64)
    assert "1 greeting proposed" in str(report)
    proposal = ImportedProposal.objects.get(kind="greet")
    assert proposal.title == "How Seraphina greets you, from the character card"
    proposal_apply(proposal_id=proposal.pk, user=admin_user)
    assert wake_text_current("greeting") == plan.greeting  # the greeting in use, replaced

    admin_client.post(reverse("heart-setup"), first_rows(person="wren", companion="sable"))
    assert Event.objects.get().content == (
        "<sable><say>*sable looks up from the fire.* Welcome, wren.</say></sable>"
    )
    again = planned("card", json.dumps(card).encode())
    assert again.greeting_here  # an import of the same card proposes it no second time
