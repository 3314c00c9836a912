import base64
import bz2
import io
import json
import struct
import zipfile
import zlib
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from silentstar.uploads import megabytes
from tests.transfer.formats.test_sillytavern import entries as lore_entries
from tests.transfer.formats.test_sillytavern import texts
from tests.transfer.test_limits import nested
from transfer.bundle import BridgeError, LoreEntry, WakePart
from transfer.formats import card as card_module
from transfer.formats.card import card_dump, card_read
from transfer.limits import DEPTH_PROBLEM

pytestmark = pytest.mark.store_free

FIXTURES = Path(__file__).parent.parent / "fixtures" / "bridges"
CARD_V2 = (FIXTURES / "card_v2.json").read_bytes()
CARD_V3 = (FIXTURES / "card_v3.json").read_bytes()
V3_DATA_REQUIRED = {
    "name",
    "description",
    "tags",
    "creator",
    "character_version",
    "mes_example",
    "extensions",
    "system_prompt",
    "post_history_instructions",
    "first_mes",
    "alternate_greetings",
    "personality",
    "scenario",
    "creator_notes",
    "group_only_greetings",
}


def chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def png_with(*texts: bytes) -> bytes:
    """A 1x1 grey PNG with the given text chunks before its image data, as the PNG spec has
    it (not as ``card_dump`` writes it)."""
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0))
        + b"".join(texts)
        + chunk(b"IDAT", zlib.compress(b"\x00\x80"))
        + chunk(b"IEND", b"")
    )


def text_chunk(keyword: str, card: bytes) -> bytes:
    return chunk(b"tEXt", keyword.encode() + b"\0" + base64.b64encode(card))


def png_chunks(data: bytes) -> dict[bytes, list[bytes]]:
    found: dict[bytes, list[bytes]] = {}
    offset = 8
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind, body = data[offset + 4 : offset + 8], data[offset + 8 : offset + 8 + length]
        (crc,) = struct.unpack(">I", data[offset + 8 + length : offset + 12 + length])
        assert crc == zlib.crc32(kind + body)
        found.setdefault(kind, []).append(body)
        offset += 12 + length
    return found


def zeros_compressed(mebibytes: int, *, wbits: int = zlib.MAX_WBITS) -> bytes:
    """``mebibytes`` MiB of zero bytes compressed (a zlib stream, or raw deflate for a zip when
    ``wbits`` is negative), without compressing them all: after a full flush the compressor
    starts afresh, so every MiB but the first compresses to the same bytes. A zlib stream ends
    with the Adler-32 of its bytes, which for n zeros is n mod 65521 in its high half and 1."""
    mebibyte = bytes(2**20)
    compressor = zlib.compressobj(9, zlib.DEFLATED, wbits)
    first = compressor.compress(mebibyte) + compressor.flush(zlib.Z_FULL_FLUSH)
    again = compressor.compress(mebibyte) + compressor.flush(zlib.Z_FULL_FLUSH)
    end = compressor.flush()
    if wbits > 0:
        end = end[:-4] + struct.pack(">I", (mebibytes * 2**20 % 65521) << 16 | 1)
    return first + again * (mebibytes - 1) + end


def zip_of(
    name: str, stored: bytes, *, size: int, crc: int, method=zipfile.ZIP_DEFLATED, flags=0
) -> bytes:
    """A zip of one member whose headers, written here, say what they are told: ``stored`` as
    the archive holds it (compressed by ``method``), its size and CRC as ``size`` and ``crc``."""
    encoded = name.encode()
    said = (flags, method, 0, 0x21, crc, len(stored), size, len(encoded), 0)
    local = struct.pack("<4s5H3I2H", b"PK\x03\x04", 20, *said) + encoded
    central = struct.pack("<4s6H3I5H2I", b"PK\x01\x02", 20, 20, *said, 0, 0, 0, 0, 0) + encoded
    end = struct.pack(
        "<4s4H2IH", b"PK\x05\x06", 0, 0, 1, 1, len(central), len(local) + len(stored), 0
    )
    return local + stored + central + end


def deflated(data: bytes) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


def refusal(data: bytes) -> list[str]:
    with pytest.raises(BridgeError) as refused:
        card_read(data, zone="UTC")
    return str(refused.value).splitlines()


def test_it_reads_a_v2_json_card():
    card = card_read(CARD_V2, zone="UTC")

    data = json.loads(CARD_V2)["data"]
    book = data["character_book"]
    assert (card.format, card.name) == ("card", "Seraphina")
    assert card.wake == [
        WakePart("Description", "{{char}} keeps the harbour lighthouse."),
        WakePart("Personality", "Patient, dry, watchful."),
        WakePart("System prompt", "Write {{char}}'s next reply."),
    ]
    assert card.entries == [
        LoreEntry(
            name="lighthouse",
            note="The lighthouse",
            keys=("lighthouse", "lamp"),
            secondary_keys=(),
            content="The lighthouse has been dark since the storm.",
            constant=False,
            enabled=True,
            where="data.character_book.entries[0]",
            kept={
                "extensions": {"position": 0, "depth": 4},
                "insertion_order": 100,
                "case_sensitive": False,
                "priority": 10,
                "id": 1,
                "selective": False,
                "position": "before_char",
            },
        ),
        LoreEntry(
            name="Maren",
            keys=("Maren",),
            secondary_keys=("ferry",),
            content="Maren runs the ferry.",
            constant=True,
            enabled=False,
            where="data.character_book.entries[1]",
            kept={"extensions": book["entries"][1]["extensions"], "insertion_order": 50},
            fragment={"key": "maren", "tiers": {"ambient": "Maren, the ferrywoman."}},
        ),
    ]
    unmapped = {"name", "description", "personality", "scenario", "system_prompt"}
    greetings = {"first_mes", "alternate_greetings", "mes_example"}
    assert card.greetings == {key: data[key] for key in greetings if data[key]}
    assert card.kept == {
        **{key: value for key, value in data.items() if key not in unmapped | greetings},
        "character_book": {key: value for key, value in book.items() if key != "entries"},
        "spec": "chara_card_v2",
        "spec_version": "2.0",
        "beside_data": {"name": "Seraphina", "description": "Old V1 copy of the description."},
        "read_from": "json",
    }


def test_it_reads_a_v3_json_card_keeping_its_new_fields():
    card = card_read(CARD_V3, zone="UTC")

    assert card.wake == [
        WakePart("Description", "V3: {{char}} keeps the harbour lighthouse."),
        WakePart("Scenario", "A harbour town after a storm."),
    ]
    assert [(e.name, e.note, e.keys, e.content) for e in card.entries] == [
        ("Oil", "", ("oil",), "Lamp oil comes on the Thursday ferry.")
    ]
    assert card.entries[0].kept == {"extensions": {}, "insertion_order": 10, "use_regex": False}
    assert card.kept["nickname"] == "Sera"
    assert card.kept["group_only_greetings"] == ["Everyone, the lamp."]
    assert card.kept["assets"][0]["uri"] == "ccdefault:"
    assert (card.kept["creation_date"], card.kept["spec"]) == (1715867160, "chara_card_v3")


def test_its_png_ccv3_chunk_wins_over_the_chara_one():
    data = png_with(text_chunk("chara", CARD_V2), text_chunk("ccv3", CARD_V3))

    card = card_read(data, zone="UTC")

    assert card.wake[0] == WakePart("Description", "V3: {{char}} keeps the harbour lighthouse.")
    assert [e.name for e in card.entries] == ["Oil"]
    assert card.kept["read_from"] == "png ccv3 chunk"
    assert card.kept["spec"] == "chara_card_v3"


def test_it_reads_a_png_with_only_a_chara_chunk():
    card = card_read(png_with(text_chunk("chara", CARD_V2)), zone="UTC")

    assert [(e.name, e.note) for e in card.entries] == [
        ("lighthouse", "The lighthouse"),
        ("Maren", ""),
    ]
    assert card.kept["read_from"] == "png chara chunk"


def test_it_reads_compressed_and_international_text_chunks():
    encoded = base64.b64encode(CARD_V2)
    compressed = chunk(b"zTXt", b"chara\0\0" + zlib.compress(encoded))
    international = chunk(b"iTXt", b"ccv3\0\1\0en\0\0" + zlib.compress(base64.b64encode(CARD_V3)))

    assert card_read(png_with(compressed), zone="UTC").name == "Seraphina"
    assert card_read(png_with(compressed, international), zone="UTC").kept["nickname"] == "Sera"


def test_it_reads_a_charx_zip():
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as charx:
        charx.writestr("card.json", CARD_V3)
        charx.writestr("assets/icon/images/main.png", png_with())

    card = card_read(archive.getvalue(), zone="UTC")

    assert card.name == "Seraphina"
    assert [e.name for e in card.entries] == ["Oil"]
    assert card.kept["read_from"] == "charx card.json"


def test_it_reads_a_v1_card():
    v1 = {
        "name": "Old Tom",
        "description": "A fisherman.",
        "personality": "Gruff.",
        "scenario": "",
        "first_mes": "Hm.",
        "mes_example": "",
    }

    card = card_read(json.dumps(v1).encode(), zone="UTC")

    assert card.name == "Old Tom"
    assert card.wake == [WakePart("Description", "A fisherman."), WakePart("Personality", "Gruff.")]
    assert card.entries == []
    assert card.greetings == {"first_mes": "Hm."}  # an empty one is no greeting
    assert card.kept == {"read_from": "json"}


def test_it_refuses_a_malformed_card_whole_naming_each_field():
    card = json.loads(CARD_V2)
    del card["data"]["name"]
    card["data"]["description"] = 12
    card["data"]["character_book"]["entries"][1]["keys"] = "Maren"
    card["data"]["character_book"]["entries"][0]["enabled"] = "yes"
    card["data"]["character_book"]["entries"].append({"keys": ["x"]})
    card["data"]["tags"] = ["fine", "but \u0000"]

    assert refusal(json.dumps(card).encode()) == [
        "data.name: missing",
        "data.description: must be a text, not a number",
        "data.tags: holds a NUL character (\\x00), which PostgreSQL cannot store",
        "data.character_book.entries[0].enabled: must be true or false, not a text",
        "data.character_book.entries[1].keys: must be a list of texts, not a text",
        "data.character_book.entries[2].content: missing",
    ]


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (png_with(), "PNG: holds no character card (no ccv3 or chara text chunk)"),
        (png_with(text_chunk("chara", CARD_V2))[:60], "PNG: the chunk at byte 33 is cut short"),
        (
            png_with(chunk(b"tEXt", b"chara\0not base64 at all!")),
            "PNG chara chunk: not base64-encoded UTF-8 text",
        ),
        (
            png_with(text_chunk("ccv3", b"{oops")),
            "PNG ccv3 chunk: line 1, column 2: not JSON",
        ),
        (b"PK\x03\x04 not really a zip", "CHARX: not a readable zip archive"),
        (b'{"spec": "chara_card_v9", "data": {}}', 'spec: not a character card ("chara_card_v9"'),
        (b'{"spec": "chara_card_v2", "data": []}', "data: must be an object, not a list"),
        (b'"just text"', "not a character card: the file holds a text, not an object"),
    ],
)
def test_it_refuses_what_is_no_card(data, said):
    assert refusal(data)[0].startswith(said)


def test_it_refuses_a_charx_without_its_card():
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as charx:
        charx.writestr("cards/card.json", CARD_V3)

    assert refusal(archive.getvalue()) == ["CHARX: no card.json at the root of the archive"]


def test_it_inflates_no_text_chunk_but_the_cards():
    broken = b"x\x9c not a zlib stream at all"
    data = png_with(
        chunk(b"zTXt", b"Comment\0\0" + broken),
        chunk(b"iTXt", b"XML:com.adobe.xmp\0\1\0\0\0" + broken),
        chunk(b"zTXt", b"chara\0\0" + broken),  # a copy for older readers, under the card
        text_chunk("CCV3", CARD_V3),
    )

    card = card_read(data, zone="UTC")

    assert card.kept["read_from"] == "png ccv3 chunk"
    assert [e.name for e in card.entries] == ["Oil"]


def test_it_refuses_a_card_chunk_that_inflates_past_the_limit(monkeypatch):
    encoded = base64.b64encode(CARD_V2)
    compressed = chunk(b"zTXt", b"chara\0\0" + zlib.compress(encoded))
    international = chunk(b"iTXt", b"chara\0\1\0en\0\0" + zlib.compress(encoded))
    plain = chunk(b"tEXt", b"chara\0" + encoded)
    monkeypatch.setattr(card_module, "PNG_TEXT_MAX_BYTES", len(encoded))
    for each in (compressed, international, plain):
        assert card_read(png_with(each), zone="UTC").name == "Seraphina"

    limit = len(encoded) - 1
    monkeypatch.setattr(card_module, "PNG_TEXT_MAX_BYTES", limit)
    refused = (
        f" {megabytes(limit)}; a card is read up to {megabytes(limit)} of base64 "
        f"({megabytes(card_module.CARD_JSON_MAX_BYTES)} of JSON), so this one is refused"
    )
    assert refusal(png_with(compressed)) == ["PNG: the chara chunk inflates past" + refused]
    assert refusal(png_with(international)) == ["PNG: the chara chunk inflates past" + refused]
    assert refusal(png_with(plain)) == ["PNG: the chara chunk holds more than" + refused]
    cut_short = png_with(chunk(b"zTXt", b"chara\0\0" + zlib.compress(encoded)[:-30]))
    assert refusal(cut_short)[0].startswith("PNG: the zTXt chunk ending at byte ")


def test_it_refuses_a_charx_card_json_past_the_limit_by_its_header(monkeypatch):
    archive = zip_of("card.json", deflated(CARD_V3), size=len(CARD_V3), crc=zlib.crc32(CARD_V3))
    assert card_read(archive, zone="UTC").kept["read_from"] == "charx card.json"

    monkeypatch.setattr(card_module, "CARD_JSON_MAX_BYTES", 100)

    assert refusal(archive) == [
        f"CHARX: card.json is {len(CARD_V3):,} bytes; a card is read up to 100 bytes, "
        "so this one is refused"
    ]


@pytest.mark.parametrize(
    ("method", "flags", "said"),
    [
        (
            zipfile.ZIP_BZIP2,
            0,
            "CHARX: card.json is compressed by method 12; "
            "only stored or deflated (the zip standard's) are read",
        ),
        (zipfile.ZIP_DEFLATED, 1, "CHARX: card.json is encrypted; it cannot be read"),
    ],
)
def test_it_reads_a_charx_card_json_only_stored_or_deflated(method, flags, said):
    stored = bz2.compress(CARD_V3) if method == zipfile.ZIP_BZIP2 else deflated(CARD_V3)
    archive = zip_of(
        "card.json", stored, size=len(CARD_V3), crc=zlib.crc32(CARD_V3), method=method, flags=flags
    )

    assert refusal(archive) == [said]


def test_it_opens_no_charx_of_more_files_than_a_card_holds(monkeypatch):
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as charx:
        charx.writestr("card.json", CARD_V3)
        for number in range(3):
            charx.writestr(f"assets/other/image/{number}.png", b"")
    monkeypatch.setattr(card_module, "CHARX_ENTRIES_MAX", 4)
    assert card_read(archive.getvalue(), zone="UTC").name == "Seraphina"

    monkeypatch.setattr(card_module, "CHARX_ENTRIES_MAX", 3)
    opened = mock.patch.object(zipfile, "ZipFile", side_effect=AssertionError("opened"))

    with opened:
        assert refusal(archive.getvalue()) == [
            "CHARX: holds more than 3 files; a card's archive is read with at most 3, "
            "so this one is refused"
        ]


def test_it_refuses_greetings_that_are_not_texts_or_past_the_most_a_card_has():
    card = json.loads(CARD_V3)
    card["data"]["alternate_greetings"] = ["Hello."] * (card_module.GREETINGS_MAX + 1)
    card["data"]["first_mes"] = ["Hi", "there"]
    many = card_module.GREETINGS_MAX + 1

    assert refusal(json.dumps(card).encode()) == [
        "data.first_mes: must be a text, not a list",
        f"data.alternate_greetings: {many} greetings; a card is read with at most "
        f"{card_module.GREETINGS_MAX}, so this one is refused",
    ]
    card["data"] |= {"first_mes": "Hi.", "alternate_greetings": "Hello." * 1000}
    assert refusal(json.dumps(card).encode()) == [
        "data.alternate_greetings: must be a list of texts, not a text"
    ]


def test_it_refuses_a_card_nested_past_the_limit():
    card = json.loads(CARD_V3)
    card["data"]["extensions"]["deep"] = nested(100)
    deepest = b'{"spec": "chara_card_v3", "data": ' + b"[" * 10_000 + b"]" * 10_000 + b"}"

    assert refusal(json.dumps(card).encode()) == [DEPTH_PROBLEM]
    assert refusal(deepest) == [DEPTH_PROBLEM]
    assert refusal(png_with(text_chunk("ccv3", deepest))) == [f"PNG ccv3 chunk: {DEPTH_PROBLEM}"]


ENTRIES = [
    LoreEntry(
        name="Maren",
        keys=("Maren",),
        secondary_keys=("ferry",),
        content="Maren runs the ferry.",
        constant=True,
        enabled=True,
        where="fragments.maren",
        fragment={"key": "maren", "tiers": {"ambient": "Maren."}},
    ),
    LoreEntry(
        name="Oil",
        keys=("oil", "lamp"),
        secondary_keys=(),
        content="Oil comes on Thursdays.",
        constant=False,
        enabled=False,
        where="fragments.oil",
    ),
]


def test_it_writes_a_v3_card_with_every_required_field():
    card = json.loads(
        card_dump(name="Sera", description="Keeps the lamp.", entries=ENTRIES, png=False)
    )

    assert (card["spec"], card["spec_version"]) == ("chara_card_v3", "3.0")
    assert set(card["data"]) >= V3_DATA_REQUIRED
    assert (card["data"]["name"], card["data"]["description"]) == ("Sera", "Keeps the lamp.")
    first, second = card["data"]["character_book"]["entries"]
    assert first["extensions"] == {"silentstar": {"key": "maren", "tiers": {"ambient": "Maren."}}}
    assert second["extensions"] == {}
    for entry in (first, second):
        assert {"keys", "content", "extensions", "enabled", "insertion_order", "use_regex"} <= set(
            entry
        )


def test_it_writes_a_png_with_a_ccv3_card_and_a_v2_copy():
    data = card_dump(name="Sera", description="Keeps the lamp.", entries=ENTRIES, png=True)

    chunks = png_chunks(data)
    width, height = struct.unpack(">II", chunks[b"IHDR"][0][:8])
    assert len(zlib.decompress(b"".join(chunks[b"IDAT"]))) == height * (1 + width * 3)
    cards = {}
    for body in chunks[b"tEXt"]:
        keyword, _, encoded = body.partition(b"\0")
        cards[keyword] = json.loads(base64.b64decode(encoded))
    assert cards[b"ccv3"]["spec"] == "chara_card_v3"
    assert cards[b"chara"]["spec"] == "chara_card_v2"
    assert "group_only_greetings" not in cards[b"chara"]["data"]
    v2_entries = cards[b"chara"]["data"]["character_book"]["entries"]
    assert [e["keys"] for e in v2_entries] == [["Maren"], ["oil", "lamp"]]
    assert "use_regex" not in v2_entries[0]
    read = card_read(data, zone="UTC")
    assert read.kept["read_from"] == "png ccv3 chunk"
    assert read.wake == [WakePart("Description", "Keeps the lamp.")]


@given(st.lists(lore_entries, max_size=5), texts, texts, st.booleans())
def test_it_reads_back_the_cards_it_writes(written, name, description, png):
    card = card_read(
        card_dump(name=name, description=description, entries=written, png=png), zone="UTC"
    )

    assert card.name == name
    assert card.wake == ([WakePart("Description", description)] if description else [])
    assert [
        (e.name, e.note, e.keys, e.secondary_keys, e.content, e.constant, e.enabled, e.fragment)
        for e in card.entries
    ] == [
        (
            e.name,
            e.note or e.name,  # its comment, else its name, for apps that show only the comment
            e.keys,
            e.secondary_keys,
            e.content,
            e.constant,
            e.enabled,
            e.fragment,
        )
        for e in written
    ]
