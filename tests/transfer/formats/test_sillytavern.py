import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.transfer.test_limits import nested
from transfer.bundle import BridgeError, LoreEntry
from transfer.formats.sillytavern import (
    ENTRY_TEMPLATE,
    chat_read,
    lorebook_dump,
    lorebook_read,
    sillytavern_read,
)
from transfer.limits import DEPTH_PROBLEM

pytestmark = pytest.mark.store_free

FIXTURES = Path(__file__).parent.parent / "fixtures" / "bridges"
LOREBOOK = (FIXTURES / "lorebook.json").read_bytes()
CHAT = (FIXTURES / "chat.jsonl").read_bytes()
HEADER = {"user_name": "Nell", "character_name": "Seraphina", "create_date": "2024-5-16@13h40m02s"}


def refusal(reader, data: bytes) -> list[str]:
    with pytest.raises(BridgeError) as refused:
        reader(data, zone="Europe/Paris")
    return str(refused.value).splitlines()


def chat_of(*lines) -> bytes:
    return "".join(
        (line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines
    ).encode()


def said(text: str, **fields) -> dict:
    return {
        "name": "Nell",
        "is_user": True,
        "is_system": False,
        "send_date": "2024-05-16T13:45:00Z",
        "mes": text,
        **fields,
    }


# --- World Info -----------------------------------------------------------------------------


def test_it_reads_a_lorebook_with_newer_fields():
    written = json.loads(LOREBOOK)["entries"]

    book = sillytavern_read(LOREBOOK, zone="Europe/Paris")

    assert (book.format, book.name) == ("sillytavern-lorebook", "Harbour town")
    assert book.kept == {"originalData": {"name": "Harbour town", "entries": []}}
    mapped = {"key", "keysecondary", "comment", "content", "constant", "disable"}
    assert book.entries == [
        LoreEntry(
            name="",
            note="The lighthouse",  # its comment: a note, never its key
            keys=("lighthouse", "lamp"),
            secondary_keys=(),
            content="The lighthouse on the north pier has been dark since the storm of '09.",
            constant=False,
            enabled=True,
            where="entries.0",
            kept={key: value for key, value in written["0"].items() if key not in mapped},
        ),
        LoreEntry(
            name="",
            keys=("Maren",),
            secondary_keys=("sister", "ferry"),
            content="Maren runs the ferry; she is Nell's older sister.",
            constant=True,
            enabled=False,
            where="entries.7",
            kept={key: value for key, value in written["7"].items() if key not in mapped},
            fragment={"key": "maren", "tiers": {"ambient": "Maren, the ferrywoman."}},
        ),
        LoreEntry(
            name="",
            keys=("storm",),
            secondary_keys=(),
            content="The storm of '09 took three boats.",
            constant=False,
            enabled=True,
            where="entries.12",
            kept={"uid": 12, "extensions": {"silentstar": "not an object"}},
        ),
    ]
    assert book.entries[0].kept["triggers"] == ["normal", "continue"]
    assert book.entries[0].kept["characterFilter"]["names"] == ["Nell"]
    assert book.entries[1].kept["someFutureField"] == {"nested": [1, 2]}


def test_it_refuses_a_malformed_lorebook_whole_naming_each_field():
    book = {
        "entries": {
            "0": {"key": ["fine"], "content": "Fine."},
            "3": {"key": "lamp", "content": 7, "disable": "no"},
            "4": {"key": ["ok", 5], "comment": "Without content"},
            "5": ["not", "an", "entry"],
            "6": {"content": "A \u0000 in it"},
            "8": {"content": "x" * 200_001},
        }
    }

    assert refusal(lorebook_read, json.dumps(book).encode()) == [
        "entries.3.key: must be a list of texts, not a text",
        "entries.3.content: must be a text, not a number",
        "entries.3.disable: must be true or false, not a text",
        "entries.4.key[1]: must be a text, not a number",
        "entries.4.content: missing",
        "entries.5: must be an object, not a list",
        "entries.6.content: holds a NUL character (\\x00), which PostgreSQL cannot store",
        "entries.8.content: is 200,001 characters long; at most 200,000 are imported",
    ]


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (
            b'{\n  "entries": {\n    "0": {"content": "x",}\n  }\n}',
            "line 3, column 25: not JSON (Illegal trailing comma",
        ),
        (b'{"entries": []}', "entries: must be an object of entries by uid, not a list"),
        (b'{"name": "Nothing here"}', "entries: missing: not a SillyTavern World Info file"),
        (b"[1, 2]", "must be an object, not a list"),
        (b'{"entries": {}, "name": "caf\xe9"}', "line 1: not UTF-8 text (byte 29 cannot be"),
    ],
)
def test_it_refuses_what_is_no_lorebook(data, said):
    assert refusal(lorebook_read, data)[0].startswith(said)


def test_it_reads_a_lorebook_with_a_byte_order_mark():
    book = lorebook_read(b"\xef\xbb\xbf" + LOREBOOK, zone="UTC")

    assert len(book.entries) == 3


def test_it_writes_every_field_of_sillytaverns_entry_template():
    entries = [
        LoreEntry(
            name="Maren",
            keys=("Maren", "ferry"),
            secondary_keys=("sister",),
            content="Maren runs the ferry.",
            constant=True,
            enabled=False,
            where="fragments.maren",
            fragment={"key": "maren", "tiers": {"ambient": "Maren."}},
        ),
        LoreEntry(
            name="Oil",
            keys=("oil",),
            secondary_keys=(),
            content="Oil comes on Thursdays.",
            constant=False,
            enabled=True,
            where="fragments.oil",
        ),
    ]

    written = json.loads(lorebook_dump(entries, name="Harbour"))

    assert written["name"] == "Harbour"
    assert list(written["entries"]) == ["0", "1"]
    first, second = written["entries"]["0"], written["entries"]["1"]
    assert set(ENTRY_TEMPLATE) | {"uid", "displayIndex", "extensions"} == set(first)
    assert (first["uid"], first["displayIndex"], second["uid"]) == (0, 0, 1)
    assert first["key"] == ["Maren", "ferry"]
    assert first["keysecondary"] == ["sister"]
    assert (first["comment"], first["content"]) == ("Maren", "Maren runs the ferry.")
    assert (first["constant"], first["disable"], second["disable"]) == (True, True, False)
    assert first["extensions"] == {"silentstar": {"key": "maren", "tiers": {"ambient": "Maren."}}}
    assert "extensions" not in second
    assert (second["order"], second["depth"], second["probability"]) == (100, 4, 100)
    assert second["characterFilter"] == {"isExclude": False, "names": [], "tags": []}


texts = st.text(st.characters(exclude_characters="\x00", exclude_categories=("Cs",)), max_size=40)
fragments = st.none() | st.dictionaries(
    st.sampled_from(["key", "tiers", "depth"]),
    st.recursive(
        st.none() | st.booleans() | st.integers() | texts,
        lambda children: (
            st.lists(children, max_size=3) | st.dictionaries(texts, children, max_size=3)
        ),
        max_leaves=6,
    ),
    max_size=3,
)
entries = st.builds(
    LoreEntry,
    name=texts,
    keys=st.lists(texts, max_size=4).map(tuple),
    secondary_keys=st.lists(texts, max_size=3).map(tuple),
    content=texts,
    constant=st.booleans(),
    enabled=st.booleans(),
    where=st.just("here"),
    fragment=fragments,
    note=texts,
)


@given(st.lists(entries, max_size=6), texts)
def test_it_reads_back_what_it_writes(written, name):
    book = lorebook_read(lorebook_dump(written, name=name), zone="UTC")

    assert book.name == name
    assert [
        (e.name, e.note, e.keys, e.secondary_keys, e.content, e.constant, e.enabled, e.fragment)
        for e in book.entries
    ] == [
        (
            "",  # a World Info entry has only its comment: the note, else the name, written there
            e.note or e.name,
            e.keys,
            e.secondary_keys,
            e.content,
            e.constant,
            e.enabled,
            e.fragment,
        )
        for e in written
    ]


# --- chats ----------------------------------------------------------------------------------


def test_it_reads_a_chat_with_swipes_system_notes_and_every_send_date_shape():
    chat = sillytavern_read(CHAT, zone="Europe/Paris")

    assert (chat.format, chat.name) == ("sillytavern-chat", "Seraphina")
    assert chat.kept == {**HEADER, "chat_metadata": {"note_prompt": "", "tainted": True}}
    assert chat.skipped == [
        "2 SillyTavern system notes (narration, comments)",
        "1 message hidden from the model in SillyTavern",
    ]
    chat_id = chat.messages[0].origin.split(":")[0]
    assert len(chat_id) == 16
    assert [
        (m.origin, m.speaker, m.is_user, m.text, m.at.astimezone(UTC)) for m in chat.messages
    ] == [
        (
            f"{chat_id}:2",
            "Seraphina",
            False,
            "*She looks up from the lamp.* You came back.",
            datetime(2024, 5, 16, 11, 40, tzinfo=UTC),
        ),
        (
            f"{chat_id}:3",
            "Nell",
            True,
            "I did. The pier was dark.",
            datetime(2024, 5, 16, 11, 45, 7, tzinfo=UTC),
        ),
        (
            f"{chat_id}:4",
            "Seraphina",
            False,
            "It has been, since the storm.",
            datetime(2024, 5, 16, 13, 46, tzinfo=UTC),
        ),
        (
            f"{chat_id}:7",
            "Nell",
            True,
            "Can we light it again?",
            datetime(2024, 5, 16, 13, 49, 30, 500000, tzinfo=UTC),
        ),
        (
            f"{chat_id}:8",
            "Seraphina",
            False,
            "Perhaps. We need oil.",
            datetime(2024, 5, 16, 13, 50, tzinfo=UTC),
        ),
        (
            f"{chat_id}:9",
            "Nell",
            True,
            "I know where to find some.",
            datetime(2024, 5, 16, 15, 51, tzinfo=UTC),
        ),
        (
            f"{chat_id}:10",
            "Seraphina",
            False,
            "Then show me.",
            datetime(2024, 5, 16, 13, 52, 3, 250000, tzinfo=UTC),
        ),
        (
            f"{chat_id}:11",
            "Nell",
            True,
            "Follow me.",
            datetime(2024, 5, 16, 13, 53, 9, 7000, tzinfo=UTC),
        ),
    ]
    assert chat.messages[2].kept == {
        "is_system": False,
        "gen_started": "2024-05-16T13:45:58.120Z",
        "gen_finished": "2024-05-16T13:46:00.002Z",
        "extra": {"api": "openai", "model": "gpt-4o"},
        "swipes": ["It has been dark for years.", "It has been, since the storm."],
        "swipe_id": 0,
        "swipe_info": [],
    }
    assert chat.messages[5].kept == {}


def test_its_chat_text_is_mes_when_the_chosen_swipe_disagrees():
    # Line 4 of the fixture chose swipe 0 but shows (and sent) the other text, as after an edit.
    chat = chat_read(CHAT, zone="UTC")

    assert chat.messages[2].text == "It has been, since the storm."
    assert chat.messages[2].kept["swipes"][0] == "It has been dark for years."


def test_its_chat_id_is_a_hash_of_the_header():
    chat = chat_read(chat_of(HEADER, said("Hi")), zone="UTC")

    said_by = b"Nell\nSeraphina\n2024-5-16@13h40m02s"
    assert chat.messages[0].origin == f"{hashlib.sha256(said_by).hexdigest()[:16]}:2"


@given(
    st.lists(texts, min_size=1, max_size=8),
    st.lists(texts, max_size=4),
    st.sampled_from(["2024-5-16@13h40m02s", 1715867160000, "May 16, 2024 1:40pm"]),
)
def test_its_origins_stay_when_the_chat_grows(first, later, created):
    header = {**HEADER, "create_date": created}
    shorter = chat_read(chat_of(header, *(said(text) for text in first)), zone="UTC")
    longer = chat_read(chat_of(header, *(said(text) for text in first + later)), zone="UTC")
    other = chat_read(
        chat_of({**header, "user_name": "Maren"}, *(said(text) for text in first)), zone="UTC"
    )

    assert [m.origin for m in longer.messages[: len(first)]] == [m.origin for m in shorter.messages]
    assert len({m.origin for m in longer.messages}) == len(first) + len(later)
    assert not {m.origin for m in other.messages} & {m.origin for m in shorter.messages}


def test_it_refuses_a_malformed_chat_whole_naming_each_line():
    data = chat_of(
        HEADER,
        said("Fine."),
        said("Bad time.", send_date="the day after"),
        "{not json",
        said("No sender.", name=None),
        {"name": "Nell", "is_user": "yes", "send_date": "2024-05-16T13:45:00Z"},
        said("A \u0000 in it."),
        said("Fine.", extra={"note": "\u0000"}),
        "[1, 2]",
        said("Hidden but odd.", is_system="sometimes"),
        said("Missing time.", send_date=None),
    )

    assert refusal(chat_read, data) == [
        "line 3: send_date: not a time ('the day after')",
        "line 4: not JSON (Expecting property name enclosed in double quotes, column 2)",
        "line 5: name: missing",
        "line 6: mes: missing",
        "line 6: is_user: must be true or false, not a text",
        "line 7: mes: holds a NUL character (\\x00), which PostgreSQL cannot store",
        "line 8: extra: holds a NUL character (\\x00), which PostgreSQL cannot store",
        "line 9: must be a message object, not a list",
        "line 10: is_system: must be true or false, not a text",
        "line 11: send_date: missing",
    ]


@pytest.mark.parametrize(
    "first",
    [
        '{"name": "Nell", "is_user": true, "mes": "Hi", "send_date": 1}',
        "not json at all",
        '{"user_name": "Nell", "character_name": "Sera", "create_date": "x", "mes": "a"}',
    ],
)
def test_it_refuses_a_chat_without_its_header(first):
    assert refusal(chat_read, chat_of(first, said("Hi")))[0].startswith(
        "line 1: not a SillyTavern chat header"
    )


def test_it_refuses_an_empty_chat():
    assert refusal(chat_read, b"\n\n") == [
        "line 1: not a SillyTavern chat header (the file is empty)"
    ]


def test_it_reads_a_chat_of_only_a_header():
    chat = sillytavern_read(chat_of(HEADER), zone="UTC")

    assert (chat.format, chat.messages, chat.kept) == ("sillytavern-chat", [], HEADER)


def test_it_names_the_line_of_a_byte_that_is_not_utf8():
    before = chat_of(HEADER, said("Fine.")) + b'{"mes": "caf'
    data = before + b'\xe9"}\n'

    assert refusal(chat_read, data) == [
        f"line 3: not UTF-8 text (byte {len(before) + 1} cannot be read as UTF-8)"
    ]


def test_it_tells_a_one_line_lorebook_from_a_chat():
    one_line = json.dumps(json.loads(LOREBOOK)).encode()

    assert sillytavern_read(one_line, zone="UTC").format == "sillytavern-lorebook"
    assert sillytavern_read(b"\n\n" + CHAT, zone="UTC").format == "sillytavern-chat"


DEEPEST = "[" * 10_000 + "]" * 10_000  # past what json.loads itself can nest


def test_it_refuses_a_lorebook_nested_past_the_limit():
    book = json.loads(LOREBOOK)
    next(iter(book["entries"].values()))["characterFilter"] = nested(100)

    assert refusal(sillytavern_read, json.dumps(book, indent=2).encode()) == [DEPTH_PROBLEM]
    assert refusal(sillytavern_read, DEEPEST.encode()) == [f"line 1: {DEPTH_PROBLEM}"]
    assert refusal(lorebook_read, b"\n" + DEEPEST.encode()) == [DEPTH_PROBLEM]


def test_it_refuses_each_chat_line_nested_past_the_limit():
    data = chat_of(HEADER, said("Fine.", extra={"swipe_info": nested(100)}), said("Fine."), DEEPEST)

    assert refusal(sillytavern_read, data) == [
        f"line 2: {DEPTH_PROBLEM}",
        f"line 4: {DEPTH_PROBLEM}",
    ]
    deep_header = json.dumps(HEADER)[:-1] + f', "chat_metadata": {DEEPEST}}}'
    assert refusal(chat_read, chat_of("", deep_header, said("Fine."))) == [
        f"line 2: {DEPTH_PROBLEM}"
    ]
    assert refusal(sillytavern_read, chat_of("", deep_header)) == [f"line 2: {DEPTH_PROBLEM}"]
