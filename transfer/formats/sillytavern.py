"""SillyTavern's files: its World Info (lorebook) JSON, read and written, and its chat JSONL, read.

A lorebook is ``{"entries": {"<uid>": entry, …}, …}``; SillyTavern fills any field an entry
lacks from its new-entry template when it loads the file, so every field but ``content`` may be
missing here too. A chat is a header line (``user_name``, ``character_name``, ``create_date``,
``chat_metadata``) and then one message a line.
"""

import hashlib
import io
import json
import re

from transfer.bundle import BridgeError, Bundle, LoreEntry, Message
from transfer.formats.dates import moment_read, zone_of
from transfer.formats.reading import (
    Checks,
    fragment_of,
    json_parsed,
    kind,
    text_decoded,
)
from transfer.limits import (
    LINE_MAX_CHARS,
    TEXT_MAX_CHARS,
    NestedTooDeep,
    json_loaded,
    json_problem,
    lines_bounded,
)

LOREBOOK_MAPPED = frozenset({"key", "keysecondary", "comment", "content", "constant", "disable"})
MESSAGE_MAPPED = frozenset({"name", "is_user", "mes", "send_date"})
FIRST_LINE = re.compile(rb"\s*([^\n]*)")
BOM = b"\xef\xbb\xbf"
HEADER_FIELDS = ("user_name", "character_name", "chat_metadata", "create_date")

# SillyTavern's new-entry template (``newWorldInfoEntryDefinition`` in
# ``public/scripts/world-info.js``), with its defaults: a written entry has every field it has.
ENTRY_TEMPLATE = {
    "key": [],
    "keysecondary": [],
    "comment": "",
    "content": "",
    "constant": False,
    "vectorized": False,
    "selective": True,
    "selectiveLogic": 0,
    "addMemo": True,
    "order": 100,
    "position": 0,
    "disable": False,
    "ignoreBudget": False,
    "excludeRecursion": False,
    "preventRecursion": False,
    "matchPersonaDescription": False,
    "matchCharacterDescription": False,
    "matchCharacterPersonality": False,
    "matchCharacterDepthPrompt": False,
    "matchScenario": False,
    "matchCreatorNotes": False,
    "delayUntilRecursion": 0,
    "probability": 100,
    "useProbability": True,
    "depth": 4,
    "outletName": "",
    "group": "",
    "groupOverride": False,
    "groupWeight": 100,
    "scanDepth": None,
    "caseSensitive": None,
    "matchWholeWords": None,
    "useGroupScoring": None,
    "automationId": "",
    "role": 0,
    "sticky": None,
    "cooldown": None,
    "delay": None,
    "triggers": [],
    "characterFilter": {"isExclude": False, "names": [], "tags": []},
}


def sillytavern_read(data: bytes, *, zone: str) -> Bundle:
    """A SillyTavern lorebook or chat, told apart by the first line: a chat's is its header,
    a whole JSON object on one line; a lorebook's is the start of one JSON document."""
    first = FIRST_LINE.match(data.removeprefix(BOM))
    try:
        header = json_loaded(first[1].decode("utf-8"))
    except NestedTooDeep as error:
        number = first.string.count(b"\n", 0, first.start(1)) + 1
        raise BridgeError(f"line {number}: {error}") from None
    except ValueError:
        header = None
    if isinstance(header, dict) and "entries" not in header and _is_header(header):
        return chat_read(data, zone=zone)
    return lorebook_read(data, zone=zone)


# --- World Info -----------------------------------------------------------------------------


def lorebook_read(data: bytes, *, zone: str) -> Bundle:
    """The entries of a SillyTavern World Info file, in the order of their uids' keys.

    ``zone`` is unused (a lorebook holds no time); every reader takes it alike.
    """
    checks = Checks()
    book = checks.object(json_parsed(text_decoded(data)), "")
    checks.refuse()
    entries_of = book.get("entries")
    if not isinstance(entries_of, dict):
        checks.add(
            "entries",
            "missing: not a SillyTavern World Info file"
            if entries_of is None
            else f"must be an object of entries by uid, not {kind(entries_of)}",
        )
        checks.refuse()
    name = checks.text(book, "name", "", default="")
    kept = checks.kept(book, "", mapped={"entries", "name"})
    entries = []
    for uid, raw in entries_of.items():
        where = f"entries.{uid}"
        entry = checks.object(raw, where)
        if entry is None:
            continue
        entries.append(
            LoreEntry(
                name="",
                note=checks.text(entry, "comment", where, default=""),
                keys=checks.texts(entry, "key", where),
                secondary_keys=checks.texts(entry, "keysecondary", where),
                content=checks.text(entry, "content", where),
                constant=checks.flag(entry, "constant", where, default=False),
                enabled=not checks.flag(entry, "disable", where, default=False),
                where=where,
                kept=checks.kept(entry, where, mapped=LOREBOOK_MAPPED),
                fragment=fragment_of(entry),
            )
        )
    checks.refuse()
    return Bundle(format="sillytavern-lorebook", name=name, entries=entries, kept=kept)


def lorebook_dump(entries: list[LoreEntry], *, name: str) -> bytes:
    """A World Info file SillyTavern opens as it is: each entry has every field of its
    new-entry template, uids from 0 in the given order, and the fragment it came from in
    ``extensions.silentstar``."""
    written = {}
    for uid, entry in enumerate(entries):
        fields = json.loads(json.dumps(ENTRY_TEMPLATE))
        fields.update(
            uid=uid,
            displayIndex=uid,
            key=list(entry.keys),
            keysecondary=list(entry.secondary_keys),
            comment=entry.note or entry.name,
            content=entry.content,
            constant=entry.constant,
            disable=not entry.enabled,
        )
        if entry.fragment is not None:
            fields["extensions"] = {"silentstar": entry.fragment}
        written[str(uid)] = fields
    return json.dumps({"name": name, "entries": written}, ensure_ascii=False, indent=2).encode()


# --- chats ----------------------------------------------------------------------------------


def chat_id_of(header: dict) -> str:
    """A chat's id: the same for every export of the same chat, however long it has grown."""
    said = f"{header.get('user_name')}\n{header.get('character_name')}\n{header.get('create_date')}"
    return hashlib.sha256(said.encode()).hexdigest()[:16]


def chat_read(data: bytes, *, zone: str) -> Bundle:
    """The messages of a SillyTavern chat, each at its file line.

    - The text is ``mes``: it is what SillyTavern shows and what it sent to the model. Choosing
      a swipe copies it into ``mes``, and editing a message writes ``mes`` (and the swipe it is
      on); so ``swipes[swipe_id]`` can only be out of date. The swipes stay in ``kept``.
    - SillyTavern's own messages are left out and counted in ``skipped``: its notes (narration
      by ``/sys``, comments, help, welcome: each with an ``extra.type``, narration even with
      ``is_system`` false, as the model reads it), and the messages the person hid from the
      model (the ghost button, ``/hide``: ``is_system`` true). Neither was said between the
      person and the companion as the companion remembers it.
    - Blank lines are passed over; a message's origin is ``<chat id>:<line>``, so a longer
      export of the same chat gives its old lines the same origins.
    """
    try:
        return _chat_read(data, zone=zone)
    except UnicodeDecodeError:
        # Decoded as it is read, a chat stays the size of its bytes in memory; only a file that
        # is not UTF-8 is decoded whole, for the line of its first bad byte.
        text_decoded(data)
        raise


def _chat_read(data: bytes, *, zone: str) -> Bundle:
    tz = zone_of(zone)
    checks = Checks()
    stream = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig", newline="\n")
    lines = lines_bounded(stream)
    header, chat_id = _header_read(lines, checks)
    messages: list[Message] = []
    notes = hidden = 0
    for number, line in lines:
        where = f"line {number}"
        if line is None:
            checks.add(where, f"longer than {LINE_MAX_CHARS:,} characters")
            continue
        if not line.strip():
            continue
        try:
            said = json_loaded(line)
        except json.JSONDecodeError as error:
            checks.add(where, f"not JSON ({error.msg}, column {error.colno})")
            continue
        except NestedTooDeep as error:
            checks.add(where, str(error))
            continue
        if not isinstance(said, dict):
            checks.add(where, f"must be a message object, not {kind(said)}")
            continue
        is_system = said.get("is_system")
        if is_system is not None and not isinstance(is_system, bool):
            checks.add(where, f"is_system: must be true or false, not {kind(is_system)}")
        extra = said.get("extra")
        if isinstance(extra, dict) and extra.get("type"):
            notes += 1
            continue
        if is_system is True:
            hidden += 1
            continue
        message = _message_read(said, line, number, chat_id=chat_id, zone=tz, checks=checks)
        if message is not None:
            messages.append(message)
    checks.refuse()
    skipped = []
    if notes:
        skipped.append(f"{notes} SillyTavern system note{'s' * (notes != 1)} (narration, comments)")
    if hidden:
        skipped.append(
            f"{hidden} message{'s' * (hidden != 1)} hidden from the model in SillyTavern"
        )
    return Bundle(
        format="sillytavern-chat",
        name=header.get("character_name") or "",
        messages=messages,
        kept=header,
        skipped=skipped,
    )


def _is_header(line: dict) -> bool:
    return "mes" not in line and any(name in line for name in HEADER_FIELDS)


def _header_read(lines, checks: Checks) -> tuple[dict, str]:
    """The header, the first line that is not blank."""
    for number, line in lines:
        if line is not None and not line.strip():
            continue
        try:
            header = json_loaded(line) if line is not None else None
        except NestedTooDeep as error:
            raise BridgeError(f"line {number}: {error}") from None
        except json.JSONDecodeError:
            header = None
        if not isinstance(header, dict) or not _is_header(header):
            raise BridgeError(
                f"line {number}: not a SillyTavern chat header "
                "(a JSON object with user_name, character_name and create_date)"
            )
        for name in ("user_name", "character_name"):
            checks.text(header, name, f"line {number}", default="")
        checks.kept(header, f"line {number}")
        return header, chat_id_of(header)
    raise BridgeError("line 1: not a SillyTavern chat header (the file is empty)")


def _message_read(
    said: dict, line: str, number: int, *, chat_id: str, zone, checks: Checks
) -> Message | None:
    where = f"line {number}"
    problems_before = len(checks.problems)
    speaker = said.get("name")
    if not isinstance(speaker, str):
        checks.add(
            where,
            "name: missing" if speaker is None else f"name: must be a text, not {kind(speaker)}",
        )
    text = said.get("mes")
    if not isinstance(text, str):
        checks.add(
            where, "mes: missing" if text is None else f"mes: must be a text, not {kind(text)}"
        )
    is_user = said.get("is_user", False)
    if not isinstance(is_user, bool):
        checks.add(where, f"is_user: must be true or false, not {kind(is_user)}")
    sent = said.get("send_date")
    at = None
    if sent is None:
        checks.add(where, "send_date: missing")
    else:
        try:
            at = moment_read(sent, zone=zone)
        except ValueError as error:
            checks.add(where, f"send_date: {error}")
    kept = {key: value for key, value in said.items() if key not in MESSAGE_MAPPED}
    # JSON writes a NUL only as the escape \u0000, and no text of a line is longer than the
    # line: a short line without that escape holds no text to refuse, and most lines are such.
    if len(line) > TEXT_MAX_CHARS or "\\u0000" in line:
        for key, value in said.items():
            if problem := json_problem(key) or json_problem(value):
                checks.add(where, f"{key}: {problem}")
    if len(checks.problems) > problems_before:
        return None
    return Message(
        origin=f"{chat_id}:{number}",
        speaker=speaker,
        is_user=is_user,
        text=text,
        at=at,
        kept=kept,
    )
