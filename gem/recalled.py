"""What a recall asks for and what it brings back: plain data, no Django.

The tag parser reads ``Recall`` requests from a reply, the Gem answers them with
``RecalledItem``s (``gem.recall``), the Lens adds its search hits in the same shape, and the
assembler places them in the next turn's Recalled section. The fragments the person's message
names come the same way, into the same turn (``gem.recall.woken_items``), each saying why it
came (``why``); so does old conversation found for the message (``lens.found``).
"""

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Recall:
    key: str
    deep: bool = True


@dataclass(frozen=True, slots=True)
class RecalledItem:
    key: str
    tier: str  # inventory | recognition | ambient (neighbours too) | whatever the caller says
    text: str
    why: str = ""  # where it came from, when not asked for: "woken by “lighthouse” in the message"
