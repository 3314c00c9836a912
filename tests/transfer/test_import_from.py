"""``manage.py import_from``: the preview in words, a dry run that writes nothing, speakers named
with --as, a refusal naming the line, and a second run that adds nothing."""

import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from events.models import Event
from mirror.models import TagSuggestion
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
        "proposals_here": counts["drafts"] + counts["wakes"] + counts["proposals_here"],
        "suggestions_here": counts["suggestions"] + counts["suggestions_here"],
        "events_here": counts["events"] + counts["events_here"],
    }
    assert (ImportedProposal.objects.count(), TagSuggestion.objects.count()) == (
        proposals,
        suggestions,
    )
    assert Event.objects.count() == events
