"""The corrected view of an event: what it says once the corrections beside it are read.

The log keeps every event as it was written. A correction is a row of its own that names the
event it corrects (``events.models.Correction``): an edit (new text), a re-attribution (another
speaker), a retraction (it should not have been said) or a restoration (the retraction undone);
and for a reply, set aside (another reply to the same message counts instead) or chosen (it
counts again). The view of an event is its text as the latest edit left it, its speaker as the
latest re-attribution left it, and out of what counts (``retracted``) when the latest of the
other four is a retraction or a setting aside: whatever came before the latest of each kind
changes nothing. Pure: no Django.
"""

from collections.abc import Iterable
from dataclasses import dataclass

EDIT = "edit"
ATTRIBUTION = "attribution"
RETRACTION = "retraction"
RESTORATION = "restoration"
ASIDE = "aside"
CHOSEN = "chosen"
KINDS = (EDIT, ATTRIBUTION, RETRACTION, RESTORATION, ASIDE, CHOSEN)
DONE = {  # what each does to a message, in words: "edited", "taken back"…
    EDIT: "edited",
    ATTRIBUTION: "given to another identity",
    RETRACTION: "taken back",
    RESTORATION: "restored",
    ASIDE: "set aside for another reply",
    CHOSEN: "chosen among the replies",
}


@dataclass(frozen=True, slots=True)
class Step:
    """One correction as the view reads it: its kind and, for an edit, the new text, for a
    re-attribution, the new speaker."""

    kind: str
    text: str = ""
    actor: str = ""

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"Unknown correction {self.kind!r}; expected one of {KINDS}.")


@dataclass(frozen=True, slots=True)
class View:
    """An event as the corrections left it, with what it was as written."""

    content: str
    actor: str
    retracted: bool  # out of what counts: taken back, or a reply set aside
    original_content: str
    original_actor: str
    aside: bool = False  # a reply set aside for another

    @property
    def edited(self) -> bool:
        return self.content != self.original_content

    @property
    def reattributed(self) -> bool:
        return self.actor != self.original_actor

    @property
    def corrected(self) -> bool:
        return self.edited or self.reattributed or self.retracted

    @property
    def taken_back(self) -> bool:
        return self.retracted and not self.aside


def corrected(content: str, actor: str, steps: Iterable[Step]) -> View:
    """The view of an event written as ``content`` by ``actor`` after ``steps``, oldest first."""
    now_content, now_actor, retracted, aside = content, actor, False, False
    for step in steps:
        if step.kind == EDIT:
            now_content = step.text
        elif step.kind == ATTRIBUTION:
            now_actor = step.actor
        else:
            retracted, aside = step.kind in (RETRACTION, ASIDE), step.kind == ASIDE
    return View(now_content, now_actor, retracted, content, actor, aside)
