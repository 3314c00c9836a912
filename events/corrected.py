"""The corrected view of an event: what it says once the corrections beside it are read.

The log keeps every event as it was written. A correction is a row of its own that names the
event it corrects (``events.models.Correction``): an edit (new text), a re-attribution (another
speaker), a retraction (it should not have been said) or a restoration (the retraction undone).
The view of an event is its text as the latest edit left it, its speaker as the latest
re-attribution left it, and retracted when the latest retraction or restoration is a
retraction: whatever came before the latest of each kind changes nothing. Pure: no Django.
"""

from collections.abc import Iterable
from dataclasses import dataclass

EDIT = "edit"
ATTRIBUTION = "attribution"
RETRACTION = "retraction"
RESTORATION = "restoration"
KINDS = (EDIT, ATTRIBUTION, RETRACTION, RESTORATION)
DONE = {  # what each does to a message, in words: "edited", "taken back"…
    EDIT: "edited",
    ATTRIBUTION: "given to another identity",
    RETRACTION: "taken back",
    RESTORATION: "restored",
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
    retracted: bool
    original_content: str
    original_actor: str

    @property
    def edited(self) -> bool:
        return self.content != self.original_content

    @property
    def reattributed(self) -> bool:
        return self.actor != self.original_actor

    @property
    def corrected(self) -> bool:
        return self.edited or self.reattributed or self.retracted


def corrected(content: str, actor: str, steps: Iterable[Step]) -> View:
    """The view of an event written as ``content`` by ``actor`` after ``steps``, oldest first."""
    now_content, now_actor, retracted = content, actor, False
    for step in steps:
        if step.kind == EDIT:
            now_content = step.text
        elif step.kind == ATTRIBUTION:
            now_actor = step.actor
        else:
            retracted = step.kind == RETRACTION
    return View(now_content, now_actor, retracted, content, actor)
