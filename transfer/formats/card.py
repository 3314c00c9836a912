"""Character cards (V1, V2 ``chara_card_v2``, V3 ``chara_card_v3``), read from JSON, from a PNG's
text chunks or from a CHARX zip, and written as V3 JSON or PNG.

A PNG carries the card base64-encoded in a ``tEXt`` chunk (``zTXt`` and ``iTXt`` are read too):
``ccv3`` for V3, ``chara`` for V2; when both are there ``ccv3`` is the card, the other a copy for
older readers (V3 spec, "Embedding Methods"). A CHARX file is a zip with ``card.json`` at its
root, its assets beside it.

Cards come from strangers, so what they hold is read within bounds: of a PNG only the one chunk
that is the card is inflated, at most ``PNG_TEXT_MAX_BYTES`` of it (the base64 of a card of
``CARD_JSON_MAX_BYTES``), and every other chunk is passed over unread; of a CHARX only
``card.json``, stored or deflated, at most ``CARD_JSON_MAX_BYTES`` of it whatever its header
says, from an archive of at most ``CHARX_ENTRIES_MAX`` files.

The card's texts are kept exactly, macros such as ``{{char}}`` and ``{{user}}`` included.
"""

import base64
import binascii
import io
import json
import struct
import zipfile
import zlib

from silentstar.uploads import megabytes
from transfer.bundle import BridgeError, Bundle, LoreEntry, WakePart
from transfer.formats.reading import (
    Checks,
    field_path,
    fragment_of,
    json_parsed,
    kind,
    text_decoded,
)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
ZIP_SIGNATURE = b"PK\x03\x04"
CARD_KEYWORDS = ("ccv3", "chara")  # the first found wins
CARD_JSON_MAX_BYTES = 48 * 2**20
PNG_TEXT_MAX_BYTES = CARD_JSON_MAX_BYTES * 4 // 3  # its base64: 64 MiB
TEXT_CHUNKS = (b"tEXt", b"zTXt", b"iTXt")
INFLATE_STEP = 2**20
KEYWORD_MAX_BYTES = 79  # a PNG text chunk's keyword, by the PNG spec
CHARX_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflated"}
# Opening a zip reads every entry of its central directory (some 400 bytes of memory each): a
# card's archive holds its assets, a few hundred at most. Each entry starts with this signature.
CHARX_ENTRIES_MAX = 10_000
CENTRAL_ENTRY = b"PK\x01\x02"
WAKE_FIELDS = (
    ("description", "Description"),
    ("personality", "Personality"),
    ("scenario", "Scenario"),
    ("system_prompt", "System prompt"),
)
ENTRY_MAPPED = frozenset(
    {"name", "comment", "keys", "secondary_keys", "content", "constant", "enabled"}
)
GREETINGS = ("first_mes", "alternate_greetings", "mes_example")
GREETINGS_MAX = 100  # alternate greetings a card may have: real ones have a handful
# Fields V3 added to a card's data and to a book entry, left out of the V2 copy of a PNG.
V3_ONLY_DATA = ("group_only_greetings", "assets", "nickname", "creator_notes_multilingual")
V3_ONLY_ENTRY = ("use_regex",)
IMAGE_SIDE = 64
IMAGE_COLOUR = bytes((0x3A, 0x3F, 0x5C))


def card_read(data: bytes, *, zone: str) -> Bundle:
    """A character card in any of its containers, told apart by their first bytes.

    ``zone`` is unused (what a card dates is kept as written); every reader takes it alike.
    """
    if data.startswith(PNG_SIGNATURE):
        card, read_from = _png_card(data)
    elif data.startswith(ZIP_SIGNATURE):
        card, read_from = _charx_card(data), "charx card.json"
    else:
        card, read_from = json_parsed(text_decoded(data)), "json"
    return _card_bundle(card, read_from=read_from)


def _png_card(data: bytes) -> tuple[object, str]:
    found: dict[str, tuple[bytes, int, int]] = {}  # keyword: chunk type, text's start and end
    offset = len(PNG_SIGNATURE)
    while offset < len(data):
        if offset + 12 > len(data):
            raise BridgeError(f"PNG: the chunk at byte {offset} is cut short")
        length, kind_of = struct.unpack_from(">I4s", data, offset)
        start, offset = offset + 8, offset + 12 + length
        if offset > len(data):
            raise BridgeError(f"PNG: the chunk at byte {start - 8} is cut short")
        if kind_of == b"IEND":
            break
        if kind_of in TEXT_CHUNKS:
            keyword = data[start : start + KEYWORD_MAX_BYTES + 1].partition(b"\0")[0]
            keyword = keyword.decode("latin-1").lower()
            if keyword in CARD_KEYWORDS:
                found.setdefault(keyword, (kind_of, start + len(keyword) + 1, offset - 4))
    keyword = next((keyword for keyword in CARD_KEYWORDS if keyword in found), None)
    if keyword is None:
        raise BridgeError("PNG: holds no character card (no ccv3 or chara text chunk)")
    text = _png_text(data, keyword, *found[keyword])
    try:
        decoded = base64.b64decode(text, validate=False).decode("utf-8-sig")
    except (binascii.Error, ValueError):
        raise BridgeError(f"PNG {keyword} chunk: not base64-encoded UTF-8 text") from None
    return json_parsed(decoded, what=f"PNG {keyword} chunk: "), f"png {keyword} chunk"


def _png_text(data: bytes, keyword: str, kind_of: bytes, start: int, end: int) -> bytes | bytearray:
    """The text of the card's chunk, which runs from ``start`` (after its keyword) to ``end``;
    inflated, if it is compressed, to at most ``PNG_TEXT_MAX_BYTES``."""
    limit = PNG_TEXT_MAX_BYTES
    view = memoryview(data)
    try:
        if kind_of == b"zTXt":  # a compression method, then the text compressed
            text = _inflated(view[start + 1 : end], limit=limit)
        elif kind_of == b"iTXt":  # a flag and a method, a language and a translated keyword
            compressed = data[start]
            language_end = data.index(b"\0", start + 2, end)
            start = data.index(b"\0", language_end + 1, end) + 1
            text = _inflated(view[start:end], limit=limit) if compressed else data[start:end]
        else:
            text = data[start:end]
    except (IndexError, ValueError, zlib.error):
        raise BridgeError(
            f"PNG: the {kind_of.decode()} chunk ending at byte {end + 4} cannot be read"
        ) from None
    if text is None or len(text) > limit:
        raise BridgeError(
            f"PNG: the {keyword} chunk "
            + ("inflates past" if text is None else "holds more than")
            + f" {megabytes(limit)}; a card is read up to {megabytes(limit)} of base64 "
            f"({megabytes(CARD_JSON_MAX_BYTES)} of JSON), so this one is refused"
        )
    return text


def _inflated(compressed, *, limit: int) -> bytearray | None:
    """``compressed`` (a zlib stream) inflated, or None if it inflates past ``limit`` bytes:
    inflated ``INFLATE_STEP`` bytes at a time, so at most one step past the limit is ever made.
    A stream cut short is a ``zlib.error``."""
    inflater = zlib.decompressobj()
    text = bytearray()
    while not inflater.eof:
        piece = inflater.decompress(compressed, INFLATE_STEP)
        compressed = inflater.unconsumed_tail
        if not piece and not compressed:
            raise zlib.error("the compressed text is cut short")
        text += piece
        if len(text) > limit:
            return None
    return text


def _charx_card(data: bytes) -> object:
    if data.count(CENTRAL_ENTRY) > CHARX_ENTRIES_MAX:
        raise BridgeError(
            f"CHARX: holds more than {CHARX_ENTRIES_MAX:,} files; a card's archive is read "
            f"with at most {CHARX_ENTRIES_MAX:,}, so this one is refused"
        )
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            try:
                info = archive.getinfo("card.json")
            except KeyError:
                raise BridgeError("CHARX: no card.json at the root of the archive") from None
            if info.flag_bits & 0x1:
                raise BridgeError("CHARX: card.json is encrypted; it cannot be read")
            if info.compress_type not in CHARX_METHODS:
                raise BridgeError(
                    f"CHARX: card.json is compressed by method {info.compress_type}; "
                    "only stored or deflated (the zip standard's) are read"
                )
            if info.file_size > CARD_JSON_MAX_BYTES:
                raise BridgeError(_charx_too_large(f"is {megabytes(info.file_size)}"))
            # A bounded stream inflates the member only as far as it is read: never past the
            # limit, nor one byte past the size its header gives (a member longer than that is
            # cut there, and then fails its CRC check).
            with archive.open(info) as member:
                raw = member.read(min(info.file_size, CARD_JSON_MAX_BYTES) + 1)
    except (zipfile.BadZipFile, zlib.error, EOFError) as error:
        raise BridgeError(f"CHARX: not a readable zip archive ({error})") from None
    if len(raw) > CARD_JSON_MAX_BYTES:
        raise BridgeError(_charx_too_large(f"inflates past {megabytes(CARD_JSON_MAX_BYTES)}"))
    return json_parsed(text_decoded(raw), what="CHARX card.json: ")


def _charx_too_large(said: str) -> str:
    return (
        f"CHARX: card.json {said}; a card is read up to {megabytes(CARD_JSON_MAX_BYTES)}, "
        "so this one is refused"
    )


def _card_bundle(card: object, *, read_from: str) -> Bundle:
    checks = Checks()
    if not isinstance(card, dict):
        raise BridgeError(f"not a character card: the file holds {kind(card)}, not an object")
    spec = card.get("spec")
    if spec in ("chara_card_v2", "chara_card_v3"):
        data = checks.object(card.get("data"), "data")
        checks.refuse()
        where = "data"
        outside = {"spec": spec, "spec_version": card.get("spec_version")}
        # Fields beside ``data`` (V2 cards often repeat the V1 fields there) are kept apart, so
        # that none is lost under a field of ``data`` of the same name.
        if beside := checks.kept(card, "", mapped={"data", "spec", "spec_version"}):
            outside["beside_data"] = beside
    elif spec is None and isinstance(card.get("name"), str):
        data, where, outside = card, "", {}
    else:
        raise BridgeError(
            f"spec: not a character card ({json.dumps(spec)[:60]}; "
            "chara_card_v2 or chara_card_v3 expected)"
        )
    name = checks.text(data, "name", where)
    wake = []
    for field, title in WAKE_FIELDS:
        if text := checks.text(data, field, where, default=""):
            wake.append(WakePart(title=title, text=text))
    greetings = _greetings(data, where, checks)
    mapped = {"name", "character_book", *GREETINGS, *(field for field, _ in WAKE_FIELDS)}
    kept = {**checks.kept(data, where, mapped=mapped), **outside, "read_from": read_from}
    entries = []
    book = data.get("character_book")
    if book is not None:
        book_where = field_path(where, "character_book")
        book = checks.object(book, book_where) or {}
        kept["character_book"] = checks.kept(book, book_where, mapped={"entries"})
        entries = _book_entries(book, book_where, checks)
    checks.refuse()
    return Bundle(
        format="card", name=name, entries=entries, wake=wake, kept=kept, greetings=greetings
    )


def _greetings(data: dict, where: str, checks: Checks) -> dict:
    """A card's greetings as read, those not empty: its first message and example messages, each
    a text, and its alternate greetings, a list of at most ``GREETINGS_MAX`` texts (a longer
    list is refused before it is read)."""
    greetings = {
        "first_mes": checks.text(data, "first_mes", where, default=""),
        "mes_example": checks.text(data, "mes_example", where, default=""),
    }
    alternate = data.get("alternate_greetings")
    if isinstance(alternate, list) and len(alternate) > GREETINGS_MAX:
        checks.add(
            field_path(where, "alternate_greetings"),
            f"{len(alternate):,} greetings; a card is read with at most {GREETINGS_MAX}, so this "
            "one is refused",
        )
    else:
        greetings["alternate_greetings"] = list(checks.texts(data, "alternate_greetings", where))
    return {field: greetings[field] for field in GREETINGS if greetings.get(field)}


def _book_entries(book: dict, book_where: str, checks: Checks) -> list[LoreEntry]:
    listed = book.get("entries", [])
    if not isinstance(listed, list):
        checks.add(f"{book_where}.entries", f"must be a list, not {kind(listed)}")
        return []
    entries = []
    for index, raw in enumerate(listed):
        where = f"{book_where}.entries[{index}]"
        entry = checks.object(raw, where)
        if entry is None:
            continue
        entries.append(
            LoreEntry(
                name=checks.text(entry, "name", where, default=""),
                note=checks.text(entry, "comment", where, default=""),
                keys=checks.texts(entry, "keys", where),
                secondary_keys=checks.texts(entry, "secondary_keys", where),
                content=checks.text(entry, "content", where),
                constant=checks.flag(entry, "constant", where, default=False),
                enabled=checks.flag(entry, "enabled", where, default=True),
                where=where,
                kept=checks.kept(entry, where, mapped=ENTRY_MAPPED),
                fragment=fragment_of(entry),
            )
        )
    return entries


# --- writing --------------------------------------------------------------------------------


def card_dump(*, name: str, description: str, entries: list[LoreEntry], png: bool) -> bytes:
    """A V3 character card of ``name``, its book holding ``entries`` (each carrying the fragment
    it came from in ``extensions.silentstar``): JSON, or a small plain PNG carrying it in a
    ``ccv3`` chunk and a V2 copy in a ``chara`` chunk for readers that know only V2."""
    card = {
        "spec": "chara_card_v3",
        "spec_version": "3.0",
        "data": _card_data(name, description, entries),
    }
    if not png:
        return json.dumps(card, ensure_ascii=False, indent=2).encode()
    return _png_written({"chara": _v2_copy(card), "ccv3": card})


def _card_data(name: str, description: str, entries: list[LoreEntry]) -> dict:
    return {
        "name": name,
        "description": description,
        "personality": "",
        "scenario": "",
        "first_mes": "",
        "mes_example": "",
        "creator_notes": "",
        "system_prompt": "",
        "post_history_instructions": "",
        "alternate_greetings": [],
        "tags": [],
        "creator": "",
        "character_version": "",
        "extensions": {},
        "group_only_greetings": [],
        "character_book": {
            "name": name,
            "extensions": {},
            "entries": [_book_entry(index, entry) for index, entry in enumerate(entries)],
        },
    }


def _book_entry(index: int, entry: LoreEntry) -> dict:
    return {
        "id": index,
        "keys": list(entry.keys),
        "secondary_keys": list(entry.secondary_keys),
        "name": entry.name,
        "comment": entry.note or entry.name,
        "content": entry.content,
        "constant": entry.constant,
        "selective": bool(entry.secondary_keys),
        "enabled": entry.enabled,
        "insertion_order": 100,
        "case_sensitive": False,
        "use_regex": False,
        "position": "before_char",
        "extensions": {} if entry.fragment is None else {"silentstar": entry.fragment},
    }


def _v2_copy(card: dict) -> dict:
    data = {key: value for key, value in card["data"].items() if key not in V3_ONLY_DATA}
    book = data["character_book"]
    data["character_book"] = {
        **book,
        "entries": [
            {key: value for key, value in entry.items() if key not in V3_ONLY_ENTRY}
            for entry in book["entries"]
        ],
    }
    return {"spec": "chara_card_v2", "spec_version": "2.0", "data": data}


def _png_written(cards: dict[str, dict]) -> bytes:
    """A plain square PNG with each card base64-encoded in a tEXt chunk of its keyword."""
    header = struct.pack(">IIBBBBB", IMAGE_SIDE, IMAGE_SIDE, 8, 2, 0, 0, 0)
    rows = (b"\0" + IMAGE_COLOUR * IMAGE_SIDE) * IMAGE_SIDE
    chunks = [(b"IHDR", header)]
    for keyword, card in cards.items():
        encoded = base64.b64encode(json.dumps(card, ensure_ascii=False).encode())
        chunks.append((b"tEXt", keyword.encode() + b"\0" + encoded))
    chunks += [(b"IDAT", zlib.compress(rows, 9)), (b"IEND", b"")]
    return PNG_SIGNATURE + b"".join(
        struct.pack(">I", len(body))
        + kind_of
        + body
        + struct.pack(">I", zlib.crc32(kind_of + body))
        for kind_of, body in chunks
    )
