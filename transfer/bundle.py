"""What another companion's memory file holds, read into one shape whatever its format.

Each reader of ``transfer/formats/`` turns a file into a ``Bundle``: lorebook entries (curated
knowledge), wake parts (who the companion is), memories (facts about the person), and messages
(a conversation). ``transfer.bridges`` makes of a bundle a draft, a proposed wake text, staged
suggestions and events. A reader checks the whole file first and raises ``BridgeError`` naming
every line or field at fault; a bundle is only ever made of a file that passed.

Every field a reader does not map is kept in ``kept`` (of the entry, memory, message or the
bundle), exactly as read, so nothing of the file is dropped.
"""

from dataclasses import dataclass, field
from datetime import datetime


class BridgeError(ValueError):
    """A file that cannot be imported; the message names each line or field at fault."""


@dataclass(frozen=True)
class LoreEntry:
    """One lorebook entry (SillyTavern's World Info, a card's book, a Letta block)."""

    name: str  # a card entry's name, the block's label; may be empty
    keys: tuple[str, ...]  # the words that trigger it, in order
    secondary_keys: tuple[str, ...]
    content: str
    constant: bool  # always in context
    enabled: bool
    where: str  # how to name it in a message: "entries.12", "data.character_book.entries[3]"
    kept: dict = field(default_factory=dict)  # the entry's other fields, exactly as read
    # The fragment it was exported from here (``extensions.silentstar``): key and tiers as
    # they were, so an export read back gives the same fragments.
    fragment: dict | None = None
    note: str = ""  # its comment: a person's note about it, never its key


@dataclass(frozen=True)
class WakePart:
    """A piece of who the companion is: a card's description, a Letta persona block."""

    title: str  # "Description", "Personality", "Scenario", "System prompt", "Persona"
    text: str


@dataclass(frozen=True)
class Memory:
    """One remembered fact about the person (a mem0 memory, a line of Letta's human block)."""

    origin: str  # stable across reads of the same memory: "mem0:<id>", "letta:<agent>:human:3"
    text: str
    at: datetime | None  # when it was remembered (aware), if the file says
    kept: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Message:
    """One message of a conversation."""

    origin: str  # stable across reads of the same message: "<chat id>:<line>", a Letta id
    speaker: str  # the name the file gives, as written
    is_user: bool  # said by the person (else by the companion)
    text: str  # the chosen swipe, for SillyTavern
    at: datetime  # aware
    kept: dict = field(default_factory=dict)  # the other swipes, ``extra``, unknown fields


@dataclass
class Bundle:
    """Everything one file holds, read and checked."""

    format: str  # "sillytavern-lorebook", "sillytavern-chat", "card", "letta", "mem0"
    name: str  # the character's, agent's or book's name; may be empty
    entries: list[LoreEntry] = field(default_factory=list)
    wake: list[WakePart] = field(default_factory=list)
    memories: list[Memory] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    kept: dict = field(default_factory=dict)  # the file's fields mapped to nothing here
    # A card's greetings and example messages as read (``first_mes``, ``alternate_greetings``,
    # ``mes_example``): not memory, kept on the import's proposals for the chat's greeting.
    greetings: dict = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)  # what was left out, said for the preview
