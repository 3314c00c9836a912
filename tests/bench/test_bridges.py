"""``python -m bench bridges``: its synthetic SillyTavern chat, and the command on a short one."""

import json

import pytest

from bench.bridges import (
    SPEAKERS,
    lorebook_said,
    lorebooks_measure,
    sillytavern_chat_write,
)
from events.models import Event
from transfer.bridges import PREVIEW_LISTED, bridge_import, bridge_plan, bundle_read
from transfer.models import ImportedMessage


@pytest.mark.django_db(databases="__all__")
def test_the_chat_is_one_sillytavern_reads_with_a_swipe_chosen_of_three(tmp_path):
    path = sillytavern_chat_write(tmp_path / "chat.jsonl", messages=9)
    lines = path.read_text().splitlines()
    assert json.loads(lines[0])["character_name"] == "Seraphina" and len(lines) == 10

    bundle = bundle_read(format="sillytavern", data=path.read_bytes())
    plan = bridge_plan(bundle, file_name="chat.jsonl", format="sillytavern", speakers=SPEAKERS)
    report = bridge_import(plan, file_sha256="0" * 64)

    assert report.counts["events"] == 9 == Event.objects.count()
    reply = json.loads(lines[2])
    event = Event.objects.order_by("pk")[1]
    assert event.content == f"<say>{reply['swipes'][1]}</say>" and event.actor == "claude"
    assert ImportedMessage.objects.get(event=event).kept["swipes"] == reply["swipes"]
    assert len(plan.turns) == 5


@pytest.mark.store_free
def test_the_command_imports_a_chat_and_prints_its_figures(bench):
    done = bench("bridges", "--messages", "3000", "--lorebooks", "none")

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("SillyTavern chat, 3,000 messages")
    assert "messages/s" in lines[0] and lines[0].endswith("3,000 events")
    assert lines[1].startswith("peak memory of the importing process (ru_maxrss):")
    assert lines[2].endswith(", 0 events added")
    assert lines[3].startswith("the preview: 1,500 turns; compressing them, 185 to 260 calls")


@pytest.mark.store_free
def test_the_command_refuses_no_messages(bench):
    done = bench("bridges", "--messages", "0")

    assert done.returncode == 1 and "--messages must be at least 1" in done.stderr


@pytest.mark.django_db(databases="__all__")
def test_it_plans_a_lorebook_whose_entries_name_each_other_and_says_its_figures(tmp_path):
    entries = PREVIEW_LISTED + 10
    (result,) = lorebooks_measure(
        folder=tmp_path, progress=lambda line: None, sizes={"small": (entries, 600, 4)}
    )
    book = json.loads((tmp_path / f"lorebook-{entries}.json").read_text())["entries"]

    assert len(book) == entries and all(len(e["content"]) >= 600 for e in book.values())
    # A disabled entry makes no fragment (it is left out, and said so): the generator disables
    # every 97th from the second, here the one.
    made = sum(not e["disable"] for e in book.values())
    assert made == entries - 1
    assert result["fragments"] == made and result["edges"] >= made
    assert result["edges_added"] == result["edges"]
    said = result["said"]
    assert said.startswith(f"A draft of {made} fragments:\nFragments created: ")
    created = said.splitlines()[1].removeprefix("Fragments created: ").split(", ")
    assert len(created) == PREVIEW_LISTED and "…and 9 more fragments, and " in said
    assert lorebook_said(result).startswith(f"SillyTavern lorebook, {entries} entries (0.0 MB)")
