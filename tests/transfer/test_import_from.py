"""``manage.py import_from``: the preview in words, a dry run that writes nothing, speakers named
with --as, a refusal naming the line, and a second run that adds nothing."""

import io
import json
import zipfile
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from events.models import Event
from lens.draft_read import draft_parse
from mirror.models import TagSuggestion
from tests.transfer.formats.test_card import png_with, text_chunk
from transfer.bridges import bundle_read
from transfer.models import ImportedProposal, ImportRun

pytestmark = pytest.mark.django_db(databases="__all__")
FIXTURES = Path(__file__).parent / "fixtures" / "bridges"


def chat(tmp_path, lines: list[dict]) -> Path:
    header = {"user_name": "Luna", "character_name": "Seraphina", "create_date": 1715867107000}
    path = tmp_path / "chat.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in [header, *lines]) + "\n")
    return path


MESSAGES = [
    {"name": "Luna", "is_user": True, "send_date": "2024-05-16T13:45:07Z", "mes": "Hello."},
    {"name": "Seraphina", "is_user": False, "send_date": "2024-05-16T13:46:00Z", "mes": "Hi."},
]


def run(*args) -> str:
    out = io.StringIO()
    call_command("import_from", *args, stdout=out)
    return out.getvalue()


def test_a_dry_run_says_what_it_would_do_and_writes_nothing(tmp_path):
    said = run(
        "sillytavern", str(chat(tmp_path, MESSAGES)), "--dry-run", "--as", "Seraphina=claude"
    )

    assert "2 messages to log as events (0 already here), 1 turn." in said
    assert "Seraphina (companion, 1) → claude" in said
    assert "Compressing them, the Mirror would make 2 to 3 calls" in said
    assert "Dry run: nothing was written." in said
    assert not Event.objects.exists() and not ImportRun.objects.exists()


def test_speakers_are_named_with_as_and_a_second_run_adds_nothing(tmp_path):
    path = chat(tmp_path, MESSAGES)

    said = run("sillytavern", str(path), "--as", "Seraphina=claude")
    again = run("sillytavern", str(path), "--as", "Seraphina=claude")

    assert said.endswith(": 2 messages logged as events.\n")
    assert again.endswith(": 2 messages already here.\n")
    assert "Nothing new: everything in this file is here already." in again
    assert list(Event.objects.values_list("actor", flat=True)) == ["luna", "claude"]


def test_an_unknown_speaker_is_refused_with_the_way_to_name_it(tmp_path):
    with pytest.raises(CommandError) as refused:
        run("sillytavern", str(chat(tmp_path, MESSAGES)))

    assert "refused, nothing imported" in str(refused.value)
    assert '--as "Seraphina=IDENTITY"' in str(refused.value)
    assert not Event.objects.exists()


def test_a_malformed_file_is_refused_whole_naming_its_line(tmp_path):
    broken = [*MESSAGES, {"name": "Luna", "is_user": True, "send_date": "soon", "mes": "Bye."}]

    with pytest.raises(CommandError, match=r"line 4: send_date"):
        run("sillytavern", str(chat(tmp_path, broken)), "--as", "Seraphina=claude")

    assert not Event.objects.exists()


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(CommandError, match="No such file"):
        run("mem0", str(tmp_path / "absent.json"))


LETTA_SPEAKERS = ("--as", "Nell=luna", "--as", "Sam=claude", "--as", "Keeper=y'lhara")


@pytest.mark.parametrize(
    ("format", "name", "options"),
    [
        ("sillytavern", "lorebook.json", ()),
        ("sillytavern", "chat.jsonl", ("--as", "Nell=luna", "--as", "Seraphina=claude")),
        ("card", "card_v3.json", ()),
        ("letta", "letta_current.af", LETTA_SPEAKERS),
        ("mem0", "mem0_results.json", ()),
    ],
)
def test_each_fixture_imports_and_a_second_import_adds_nothing(format, name, options):
    path = FIXTURES / name
    first = run(format, str(path), *options)
    counts = ImportRun.objects.get().counts
    proposals, suggestions, events = (
        ImportedProposal.objects.count(),
        TagSuggestion.objects.count(),
        Event.objects.count(),
    )
    assert proposals + suggestions + events > 0, first

    second = run(format, str(path), *options)

    assert "Nothing new" in second
    assert ImportRun.objects.order_by("-pk").first().counts == {
        **{key: 0 for key in counts},
        "messages": counts["messages"],
        "proposals_here": counts["drafts"] + counts["wakes"] + counts["proposals_here"],
        "suggestions_here": counts["suggestions"] + counts["suggestions_here"],
        "events_here": counts["events"] + counts["events_here"],
    }
    assert (ImportedProposal.objects.count(), TagSuggestion.objects.count()) == (
        proposals,
        suggestions,
    )
    assert Event.objects.count() == events


def png_with_both_chunks() -> bytes:
    """A PNG card whose ``chara`` chunk (V2) says one thing and ``ccv3`` (V3) another."""
    v2 = json.loads((FIXTURES / "card_v2.json").read_bytes())
    v3 = (FIXTURES / "card_v3.json").read_bytes()
    return png_with(text_chunk("chara", json.dumps(v2).encode()), text_chunk("ccv3", v3))


def charx() -> bytes:
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w") as archive:
        archive.writestr("card.json", (FIXTURES / "card_v3.json").read_bytes())
        archive.writestr("assets/icon/main.png", b"\x89PNG")
    return packed.getvalue()


def twice_encoded() -> bytes:
    return json.dumps((FIXTURES / "letta_current.af").read_text()).encode()


# Each fixture, as the whole import makes it: the fragments of its draft (key: tiers given),
# its edges, whether it proposes a wake text, its suggestions, and its events (said by, words).
EXPECTED = {
    "lorebook.json": (
        {"the-lighthouse": ["recognition"], "maren": ["recognition"], "storm": ["recognition"]},
        [("the-lighthouse", "storm", "names")],
        False,
        [],
        0,
    ),
    "card.png": ({"oil": ["recognition"]}, [], True, [], 0),
    "card.charx": ({"oil": ["recognition"]}, [], True, [], 0),
    "letta_twice.af": (
        {"places": ["ambient"]},
        [],
        True,
        [("desc", "First name: Nell"), ("desc", "Lives by the harbour")],
        3,
    ),
    "letta_older.af": (
        {"projects": ["ambient"]},
        [],
        True,
        [("desc", "First name: Chad"), ("pin", "Likes sailing"), ("desc", "Studies at Berkeley")],
        3,
    ),
    "chat.jsonl": ({}, [], False, [], 8),
    "mem0_list.json": (
        {},
        [],
        False,
        [("desc", "Name is Nell"), ("desc", "Is afraid of the dark pier")],
        0,
    ),
}
FILES = {
    "lorebook.json": ("sillytavern", lambda: (FIXTURES / "lorebook.json").read_bytes()),
    "card.png": ("card", png_with_both_chunks),
    "card.charx": ("card", charx),
    "letta_twice.af": ("letta", twice_encoded),
    "letta_older.af": ("letta", lambda: (FIXTURES / "letta_older.af").read_bytes()),
    "chat.jsonl": ("sillytavern", lambda: (FIXTURES / "chat.jsonl").read_bytes()),
    "mem0_list.json": ("mem0", lambda: (FIXTURES / "mem0_list.json").read_bytes()),
}
SPEAKERS = (
    "--as", "Nell=luna", "--as", "Sam=claude", "--as", "Keeper=y'lhara",
    "--as", "Seraphina=claude", "--as", "user=luna", "--as", "sam=claude",
)  # fmt: skip


@pytest.mark.parametrize("name", EXPECTED)
def test_each_file_imports_to_exactly_its_drafts_suggestions_and_events(name, tmp_path):
    format, made = FILES[name]
    path = tmp_path / name
    path.write_bytes(made())
    fragments, edges, wake, suggestions, events = EXPECTED[name]
    bundle = bundle_read(format=format, data=path.read_bytes())
    speakers = {s.speaker for s in bundle.messages}
    options = [
        option for pair in zip(SPEAKERS[::2], SPEAKERS[1::2], strict=True)
        if pair[1].split("=")[0] in speakers for option in pair
    ]  # fmt: skip

    run(format, str(path), *options)

    draft = ImportedProposal.objects.filter(kind="draft").first()
    if fragments:
        parsed = draft_parse(draft.text)
        assert {f.key: sorted(f.tiers) for f in parsed.fragments} == fragments
        assert sorted(
            (e.source, e.target, e.relation) for f in parsed.fragments for e in f.edges or ()
        ) == sorted(edges * 2)  # each edge is listed by both its ends
    else:
        assert draft is None
    assert ImportedProposal.objects.filter(kind="wake").exists() == wake
    assert sorted(TagSuggestion.objects.values_list("type", "content")) == sorted(suggestions)
    assert Event.objects.count() == events
    assert not Event.objects.filter(actor="").exists()
