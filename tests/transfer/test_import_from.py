"""``manage.py import_from``: the preview in words, a dry run that writes nothing, speakers named
with --as, a refusal naming the line, and a second run that adds nothing."""

import io
import json
import os
import subprocess
import sys
import threading
import zipfile
import zlib
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from events.models import Event
from gem.draft import draft_parse
from mirror.models import TagSuggestion
from tests.conftest import REPO
from tests.transfer.formats.test_card import (
    chunk,
    png_with,
    text_chunk,
    zeros_compressed,
    zip_of,
)
from transfer import bridges
from transfer.bridges import bundle_read
from transfer.formats.card import GREETINGS_MAX
from transfer.limits import DEPTH_PROBLEM
from transfer.models import ImportedProposal, ImportRun, RunStatus

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


def test_an_import_marked_stopped_while_it_ran_says_what_it_wrote_stays(tmp_path, monkeypatch):
    write = bridges._events_write

    def written_then_taken_for_dead(plan, run, counts, **options):
        write(plan, run, counts, **options)
        ImportRun.objects.filter(pk=run.pk).update(status=RunStatus.STOPPED)

    monkeypatch.setattr(bridges, "_events_write", written_then_taken_for_dead)

    with pytest.raises(CommandError) as stopped:
        run("sillytavern", str(chat(tmp_path, MESSAGES)), "--as", "Seraphina=claude")

    assert "nothing imported" not in str(stopped.value)
    assert "What it wrote stays; importing the same file again finishes it." in str(stopped.value)
    assert Event.objects.count() == 2


def test_a_dry_run_says_what_the_page_says_of_a_lorebooks_entries(tmp_path):
    """A constant entry's ambient-prose addition and a disabled entry left out, in words, as
    the Anvil's preview says them."""
    book = json.loads((FIXTURES / "lorebook.json").read_text())
    book["entries"]["12"]["constant"] = True
    path = tmp_path / "lorebook.json"
    path.write_text(json.dumps(book))

    said = run("sillytavern", str(path), "--dry-run")

    assert "A proposed addition to the ambient prose:" in said
    assert "Left out: " in said and "“Maren” would wake it" in said
    assert not ImportedProposal.objects.exists()


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
        "proposals_here": sum(
            counts[name]
            for name in ("drafts", "wakes", "prose_additions", "greetings", "proposals_here")
        ),
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
        {"lighthouse": ["recognition"], "storm": ["recognition"]},  # maren is disabled
        [("lighthouse", "storm", "names")],
        False,
        [],
        0,
    ),
    "card.png": ({"oil": ["recognition"]}, [], True, [], 0),
    "card.charx": ({"oil": ["recognition"]}, [], True, [], 0),
    "letta_twice.af": (
        {"places": ["ambient", "recognition"]},
        [],
        True,
        [("desc", "First name: Nell"), ("desc", "Lives by the harbour")],
        3,
    ),
    "letta_older.af": (
        {"projects": ["ambient", "recognition"]},
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


def test_a_file_past_the_size_limit_is_refused_as_the_import_page_refuses_it(settings, tmp_path):
    settings.IMPORT_MAX_BYTES = 100
    path = tmp_path / "memories.json"
    path.write_bytes(b" " * 99 + b"[]")
    empty = tmp_path / "empty.json"
    empty.write_bytes(b"")

    with pytest.raises(CommandError) as large:
        run("mem0", str(path))
    with pytest.raises(CommandError) as nothing:
        run("mem0", str(empty))

    limit = "a file to import may be at most 100 bytes (SILENTSTAR_IMPORT_MAX_BYTES)."
    assert str(large.value) == f"{path} is 101 bytes; {limit}"
    assert str(nothing.value) == f"{empty} is empty: there is nothing to import."
    assert not ImportRun.objects.exists()


def test_a_stream_past_the_size_limit_is_refused_having_read_one_byte_more(settings, tmp_path):
    settings.IMPORT_MAX_BYTES = 100
    fifo = tmp_path / "chat.jsonl"  # a pipe: its size is known only by reading it
    os.mkfifo(fifo)

    def write() -> None:
        with fifo.open("wb") as writing:
            writing.write(b"x" * 150)

    writer = threading.Thread(target=write)
    writer.start()
    with pytest.raises(CommandError) as refused:
        run("sillytavern", str(fifo))
    writer.join()

    assert str(refused.value) == (
        f"{fifo} is more than 100 bytes; "
        "a file to import may be at most 100 bytes (SILENTSTAR_IMPORT_MAX_BYTES)."
    )


@pytest.mark.parametrize("depth", [500, 10_000])
def test_a_card_nested_past_the_limit_is_refused_in_words(depth, tmp_path):
    path = tmp_path / "deep.json"
    path.write_text('{"name": "Deep", "extensions": ' + "[" * depth + "]" * depth + "}")

    with pytest.raises(CommandError) as refused:
        run("card", str(path))

    assert str(refused.value) == f"{path} refused, nothing imported:\n{DEPTH_PROBLEM}"


def test_a_card_of_ten_thousand_greetings_is_refused_in_words_and_nothing_kept(tmp_path):
    path = tmp_path / "greeter.json"
    card = {"spec": "chara_card_v2", "data": {"name": "Greeter", "description": "Waves."}}
    card["data"]["alternate_greetings"] = [f"Hello, {n}." for n in range(10_000)]
    path.write_text(json.dumps(card))

    with pytest.raises(CommandError) as refused:
        run("card", str(path))

    assert str(refused.value) == (
        f"{path} refused, nothing imported:\ndata.alternate_greetings: 10,000 greetings; a card "
        f"is read with at most {GREETINGS_MAX}, so this one is refused"
    )
    assert not ImportedProposal.objects.exists()


PEAK_MAX_MIB = 200
PEAK_READ = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30))
import django
django.setup()
from pathlib import Path
from transfer.bundle import BridgeError
from transfer.formats.card import card_read
try:
    card_read(Path(sys.argv[1]).read_bytes(), zone="UTC")
except BridgeError as error:
    print(error)
# This process's own high-water mark, in KiB: getrusage's ru_maxrss keeps, across exec, the size
# of the process it was forked from (a test worker of hundreds of MB).
status = Path("/proc/self/status").read_text().splitlines()
print(next(line.split()[1] for line in status if line.startswith("VmHWM:")))
"""


def png_bomb() -> bytes:
    """A PNG of 2 MB whose two text chunks, one of them the card's, each inflate to a GiB."""
    return png_with(
        chunk(b"zTXt", b"Comment\0\0" + zeros_compressed(1024)),
        chunk(b"zTXt", b"chara\0\0" + zeros_compressed(1024)),
    )


def charx_bomb() -> bytes:
    """A CHARX of 1 MB whose card.json inflates to a GiB, while its headers say 40 bytes."""
    deflated = zeros_compressed(1024, wbits=-zlib.MAX_WBITS)
    return zip_of("card.json", deflated, size=40, crc=zlib.crc32(bytes(40)))


@pytest.mark.parametrize(
    ("made", "said"),
    [
        (
            png_bomb,
            "PNG: the chara chunk inflates past 64.00 MB; a card is read up to 64.00 MB of "
            "base64 (48.00 MB of JSON), so this one is refused",
        ),
        (charx_bomb, "CHARX card.json: line 1, column 1: not JSON (Expecting value)"),
    ],
    ids=["png", "charx"],
)
def test_a_card_bomb_is_refused_by_a_process_that_stays_under_200_mib(made, said, tmp_path):
    """Read by the card reader in a fresh process (a test process's peak only grows), which
    says its own peak resident memory (VmHWM, in KiB). Its address space is capped at a GiB,
    so that a reader inflating a bomb whole fails at once instead of taking the machine's
    memory."""
    path = tmp_path / "card"
    path.write_bytes(made())

    read = subprocess.run(
        [sys.executable, "-c", PEAK_READ, str(path)],
        cwd=REPO,
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "silentstar.settings",
            "SILENTSTAR_DATA_DIR": str(tmp_path / "data"),
        },
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert read.returncode == 0, read.stderr
    refused, peak_kib = read.stdout.splitlines()
    assert refused == said
    assert int(peak_kib) < PEAK_MAX_MIB * 1024
