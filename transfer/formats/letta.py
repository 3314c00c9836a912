"""Letta's agent files (``.af``), both generations.

- The older (Letta 0.6 to 0.7) is one agent object: ``name``, ``system``, ``core_memory`` (its
  blocks: ``label``, ``value``, ``limit``, …), ``messages``, ``tools``, ``llm_config``, ….
- The current (``AgentFileSchema``) is ``{agents, blocks, files, sources, tools, mcp_servers,
  groups, metadata}``; an agent names its blocks by ``block_ids`` and holds its ``messages``.
  Its ids (``agent-0``, ``block-1``, ``message-7``) are the file's own.
- Some published files are that JSON written once more as a JSON string: read through.

Blocks: ``persona`` is who the companion is (a wake part); ``human`` is what it knows of the
person, one memory a line; every other block a lorebook entry, always in context as core memory.

Messages: only what the person and the companion said is the conversation.

- A user message's text may be the JSON ``{"type": "user_message", "message": …}`` older Letta
  wrapped it in: the message is unwrapped. Its other JSON notes (``heartbeat``, ``login``,
  ``system_alert``) are Letta talking to the model: left out and counted.
- A MemGPT-style assistant message's content is the agent's inner thoughts, and its reply goes
  out through a ``send_message`` tool call (``arguments: {"message": …}``): that is its text, the
  thoughts stay in ``kept``. An assistant message calling other tools only is left out (its
  calls are not said to anyone); one with no tool call says its content (``letta_v1_agent``).
- ``system`` and ``tool`` messages, and roles added since, are left out and counted.

Letta writes its times in UTC (``get_utc_time``): a time without an offset is read as UTC.
"""

import hashlib
import re
from datetime import UTC

from silentstar.words import counted
from transfer.bundle import BridgeError, Bundle, LoreEntry, Memory, Message, WakePart
from transfer.formats.dates import moment_read
from transfer.formats.reading import (
    Checks,
    field_path,
    json_parsed,
    kind,
    text_decoded,
)
from transfer.limits import NestedTooDeep, json_loaded

BULLET = re.compile(r"\s*(?:[-*•+]|\d{1,3}[.)])\s+")
BLOCK_MAPPED = frozenset({"label", "value"})
TEXT_PART_FIELDS = {"type", "text", "signature"}
LETTA_NOTES = {
    "heartbeat": "heartbeat",
    "login": "login notice",
    "system_alert": "system alert",
}
SKIPPED_ROLES = {"system": "system message", "tool": "tool result"}


def letta_read(data: bytes, *, zone: str) -> Bundle:
    """A Letta agent file, of either generation.

    ``zone`` is unused: Letta's times are UTC (see the module's docstring).
    """
    document = json_parsed(text_decoded(data))
    if isinstance(document, str):
        document = json_parsed(document, what="the JSON text the file holds: ")
    if not isinstance(document, dict):
        raise BridgeError(f"not a Letta agent file: it holds {kind(document)}, not an object")
    if "agents" in document:
        return _current_read(document)
    if "core_memory" in document or "messages" in document:
        return _older_read(document)
    raise BridgeError("not a Letta agent file (neither an agents list nor core_memory)")


class _Reading:
    """One file's reading: its checks, and what has been read so far."""

    def __init__(self) -> None:
        self.checks = Checks()
        self.bundle = Bundle(format="letta", name="")
        self.left_out: dict[str, int] = {}

    def block(self, block: dict, where: str, *, owner: str) -> None:
        checks = self.checks
        label = checks.text(block, "label", where)
        value = checks.text(block, "value", where, default="")
        kept = checks.kept(block, where, mapped=BLOCK_MAPPED)
        if label == "persona":
            if value.strip():
                self.bundle.wake.append(WakePart(title="Persona", text=value))
        elif label == "human":
            at = self.moment(block, "updated_at", where) or self.moment(block, "created_at", where)
            self.human(value, at=at, where=where, owner=owner)
        else:
            self.bundle.entries.append(
                LoreEntry(
                    name=label,
                    keys=(label,),
                    secondary_keys=(),
                    content=value,
                    constant=True,
                    enabled=True,
                    where=where,
                    kept=kept,
                )
            )

    def human(self, value: str, *, at, where: str, owner: str) -> None:
        seen = set()
        for number, line in enumerate(value.splitlines(), start=1):
            text = BULLET.sub("", line, count=1).strip()
            if not text or text in seen:
                continue
            seen.add(text)
            digest = hashlib.sha256(text.encode()).hexdigest()[:16]
            self.bundle.memories.append(
                Memory(
                    origin=f"letta:{owner}:human:{digest}",
                    text=text,
                    at=at,
                    kept={"block": where, "line": number},
                )
            )

    def moment(self, holder: dict, key: str, where: str):
        value = holder.get(key)
        if value is None:
            return None
        try:
            return moment_read(value, zone=UTC)
        except ValueError as error:
            self.checks.add(field_path(where, key), str(error))
            return None

    def messages(self, agent: dict, where: str, *, agent_name: str, owner: str) -> None:
        listed = agent.get("messages") or []
        if not isinstance(listed, list):
            self.checks.add(field_path(where, "messages"), f"must be a list, not {kind(listed)}")
            return
        for index, raw in enumerate(listed):
            message_where = f"{field_path(where, 'messages')}[{index}]"
            said = self.checks.object(raw, message_where)
            if said is not None:
                self.message(said, message_where, index=index, agent_name=agent_name, owner=owner)

    def message(self, said: dict, where: str, *, index: int, agent_name: str, owner: str) -> None:
        checks = self.checks
        role = checks.text(said, "role", where)
        at = self.moment(said, "created_at", where)
        if said.get("created_at") is None:
            checks.add(f"{where}.created_at", "missing")
        content, content_key = self.content(said, where)
        mapped = {"id", "role", "created_at"}
        if role == "user":
            speaker = checks.text(said, "name", where, default="") or "user"
            mapped.add("name")
            text, note = _unwrapped(content)
            if note:
                return self.leave_out(LETTA_NOTES.get(note, f"Letta {note} note"))
            if text == content:
                mapped.add(content_key)
        elif role == "assistant":
            speaker = agent_name
            replies = self.replies(said, where)
            if replies:
                text = "\n\n".join(replies)
            elif said.get("tool_calls"):
                return self.leave_out("tool call")
            else:
                text = content
                mapped.add(content_key)
        elif role:
            return self.leave_out(SKIPPED_ROLES.get(role, f"{role} message"))
        else:
            return
        if not text.strip():
            return self.leave_out("empty message")
        message_id = checks.text(said, "id", where, default="")
        kept = checks.kept(said, where, mapped=mapped)
        if at is None:
            return
        self.bundle.messages.append(
            Message(
                origin=f"letta:{message_id}" if message_id else f"letta:{owner}:{index}",
                speaker=speaker,
                is_user=role == "user",
                text=text,
                at=at,
                kept=kept,
            )
        )

    def content(self, said: dict, where: str) -> tuple[str, str]:
        """The text of a message: its ``content`` as a text, or the text parts of its list
        (older files may say ``text`` instead); and the field it is all of, to leave out of
        ``kept``, or "" when the field holds more (reasoning, images) and is kept whole."""
        key = "content" if "content" in said else "text"
        value = said.get(key)
        if value is None or isinstance(value, str):
            return self.checks.text(said, key, where, default=""), key
        if not isinstance(value, list):
            self.checks.add(f"{where}.{key}", f"must be a text or a list, not {kind(value)}")
            return "", ""
        texts = []
        for index, part in enumerate(value):
            part_where = f"{where}.{key}[{index}]"
            if isinstance(part, dict) and part.get("type") == "text":
                texts.append(self.checks.text(part, "text", part_where))
            elif not isinstance(part, dict):
                self.checks.add(part_where, f"must be an object, not {kind(part)}")
        only_text = all(
            isinstance(part, dict)
            and part.get("type") == "text"
            and part.keys() <= TEXT_PART_FIELDS
            and part.get("signature") is None
            for part in value
        )
        return "\n".join(texts), key if only_text else ""

    def replies(self, said: dict, where: str) -> list[str]:
        """What an assistant message says through ``send_message`` calls."""
        calls = said.get("tool_calls") or []
        if not isinstance(calls, list):
            self.checks.add(f"{where}.tool_calls", f"must be a list, not {kind(calls)}")
            return []
        replies = []
        for index, call in enumerate(calls):
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict) or function.get("name") != "send_message":
                continue
            call_where = f"{where}.tool_calls[{index}].function.arguments"
            try:
                arguments = json_loaded(function.get("arguments") or "{}")
            except NestedTooDeep as error:
                self.checks.add(call_where, str(error))
                continue
            except (TypeError, ValueError):
                self.checks.add(call_where, "not JSON")
                continue
            message = arguments.get("message") if isinstance(arguments, dict) else None
            if isinstance(message, str):
                replies.append(message)
            else:
                self.checks.add(call_where, "holds no message text")
        return replies

    def leave_out(self, what: str) -> None:
        self.left_out[what] = self.left_out.get(what, 0) + 1

    def done(self) -> Bundle:
        self.checks.refuse()
        self.bundle.skipped = [counted(count, what) for what, count in self.left_out.items()]
        return self.bundle


def _unwrapped(content: str) -> tuple[str, str | None]:
    """A user message's text, and the kind of Letta note it is instead, if it is one."""
    if not content.startswith("{"):
        return content, None
    try:
        wrapped = json_loaded(content)
    except ValueError:  # not JSON, or nested too deeply to be one of Letta's notes
        return content, None
    if not isinstance(wrapped, dict) or not isinstance(wrapped.get("type"), str):
        return content, None
    if wrapped["type"] == "user_message" and isinstance(wrapped.get("message"), str):
        return wrapped["message"], None
    return "", wrapped["type"]


def _current_read(document: dict) -> Bundle:
    reading = _Reading()
    checks = reading.checks
    agents = document.get("agents")
    if not isinstance(agents, list):
        checks.add("agents", f"must be a list, not {kind(agents)}")
        checks.refuse()
    blocks = document.get("blocks") or []
    if not isinstance(blocks, list):
        checks.add("blocks", f"must be a list, not {kind(blocks)}")
        checks.refuse()
    block_ids = {
        block.get("id"): index for index, block in enumerate(blocks) if isinstance(block, dict)
    }
    owner_of: dict[int, str] = {}
    first_owner = ""
    kept_agents = []
    for index, raw in enumerate(agents):
        where = f"agents[{index}]"
        agent = checks.object(raw, where)
        if agent is None:
            continue
        name = checks.text(agent, "name", where)
        owner = checks.text(agent, "id", where, default="") or name
        if index == 0:
            reading.bundle.name, first_owner = name, owner
        for position, block_id in enumerate(checks.texts(agent, "block_ids", where)):
            if block_id not in block_ids:
                checks.add(f"{where}.block_ids[{position}]", f"no block “{block_id}” in blocks")
            else:
                owner_of.setdefault(block_ids[block_id], owner)
        reading.messages(agent, where, agent_name=name, owner=owner)
        kept_agents.append(checks.kept(agent, where, mapped={"messages"}))
    for index, raw in enumerate(blocks):
        where = f"blocks[{index}]"
        block = checks.object(raw, where)
        if block is not None:
            reading.block(block, where, owner=owner_of.get(index, first_owner))
    reading.bundle.kept = {
        **checks.kept(document, "", mapped={"agents", "blocks"}),
        "agents": kept_agents,
    }
    return reading.done()


def _older_read(agent: dict) -> Bundle:
    reading = _Reading()
    checks = reading.checks
    name = checks.text(agent, "name", "")
    owner = checks.text(agent, "id", "", default="") or name
    reading.bundle.name = name
    blocks = agent.get("core_memory") or []
    if not isinstance(blocks, list):
        checks.add("core_memory", f"must be a list, not {kind(blocks)}")
        blocks = []
    for index, raw in enumerate(blocks):
        where = f"core_memory[{index}]"
        block = checks.object(raw, where)
        if block is not None:
            reading.block(block, where, owner=owner)
    reading.messages(agent, "", agent_name=name, owner=owner)
    reading.bundle.kept = checks.kept(agent, "", mapped={"core_memory", "messages"})
    return reading.done()
