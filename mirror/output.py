"""Reading what the Mirror's strongest pass answers: the hybrid output of the seed.

Pure: no ORM, no settings. ``output_parse`` never raises and never loses a word: whatever it
does not understand stays in the notes.

The shape asked for (headings in any case, with or without ``#``, ``**`` or a colon)::

    ## Shape
    One or two sentences of emotional shape.
    ## Notes
    - structured notes, one per line
    ## Suggestions
    - pin: a working-memory item to stage
    - desc (hasuki): a description with its subject
    - <pin>the tag language works too</pin>

Text before any heading is the shape when there is no Shape section, else a note. A line under
Suggestions that is not ``type: text``, ``type (subject): text``, ``[type] text`` or
``<type>text</type>`` with a working-memory type, and ``none``, are kept as notes. List markers
(``-``, ``*``, ``•``, ``1.``) are dropped from suggestions; notes keep their lines as written.

``suggestions_chosen`` caps and de-duplicates the suggestions of one chunk: pins first, then in
the order given; one whose words overlap an active working-memory item, a pending suggestion or
one already chosen by at least ``DUPLICATE_OVERLAP`` (``gem.match.word_overlap``) is left out.
"""

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gem.match import word_overlap

SUGGESTION_TYPES = ("feeling", "thought", "pattern", "desc", "plan", "pin", "secret")
DUPLICATE_OVERLAP = 0.5
SHAPE, NOTES, SUGGESTIONS = "shape", "notes", "suggestions"
HEADING_WORDS = {
    "shape": SHAPE,
    "emotional shape": SHAPE,
    "notes": NOTES,
    "structured notes": NOTES,
    "suggestions": SUGGESTIONS,
    "tag suggestions": SUGGESTIONS,
    "tags": SUGGESTIONS,
}

_HEADING_RE = re.compile(
    r"^\s*(?:#{1,6}\s*)?(?:\*\*|__)?\s*(" + "|".join(HEADING_WORDS) + r")\s*(?:\*\*|__)?\s*:?"
    r"\s*(?:\*\*|__)?\s*$",
    re.IGNORECASE,
)
_BULLET_RE = re.compile(r"^\s*(?:[-*•]|\d{1,3}[.)])\s+")
_TYPES = "|".join(SUGGESTION_TYPES)
_LINE_RE = re.compile(
    rf"^\[?({_TYPES})\]?\s*(?:\(([^()\n]*)\))?\s*[:—–-]\s*(\S.*)$"
    rf"|^\[({_TYPES})\]\s+(\S.*)$",
    re.IGNORECASE,
)
_TAG_RE = re.compile(rf"^<({_TYPES})>(.*)</\1>$", re.IGNORECASE | re.DOTALL)
_NONE_RE = re.compile(r"^\(?(none|nothing)\.?\)?$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Suggestion:
    type: str
    content: str
    subject: str = ""


@dataclass(frozen=True, slots=True)
class Output:
    shape: str
    notes: tuple[str, ...]
    suggestions: tuple[Suggestion, ...]

    @property
    def content(self) -> str:
        """The summary's text: the shape, then the notes, one per line."""
        return "\n".join(part for part in (self.shape, "\n".join(self.notes)) if part).strip()


def output_parse(text: object) -> Output:
    """The hybrid output read from ``text``; see the module docstring. Never raises."""
    raw = text if isinstance(text, str) else ("" if text is None else str(text))
    sections: dict[str, list[str]] = {SHAPE: [], NOTES: [], SUGGESTIONS: []}
    leading: list[str] = []
    current: str | None = None
    seen_shape = False
    for line in raw.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if match := _HEADING_RE.match(line):
            current = HEADING_WORDS[" ".join(match[1].lower().split())]
            seen_shape = seen_shape or current == SHAPE
            continue
        if not line.strip():
            continue
        (leading if current is None else sections[current]).append(line.strip())
    if seen_shape:
        sections[NOTES][:0] = leading
    else:
        sections[SHAPE][:0] = leading
    suggestions = []
    for line in sections[SUGGESTIONS]:
        suggestion = _suggestion(line)
        if suggestion is not None:
            suggestions.append(suggestion)
        elif not _NONE_RE.match(_BULLET_RE.sub("", line).strip()):
            sections[NOTES].append(line)
    return Output(
        shape=" ".join(sections[SHAPE]),
        notes=tuple(sections[NOTES]),
        suggestions=tuple(suggestions),
    )


def _suggestion(line: str) -> Suggestion | None:
    body = _BULLET_RE.sub("", line).strip()
    if tag := _TAG_RE.match(body):
        kind, text = tag[1].lower(), " ".join(tag[2].split())
        subject = ""
        if kind == "desc":
            head, colon, rest = text.partition(":")
            if colon and head.strip() and rest.strip():
                subject, text = head.strip(), rest.strip()
        return Suggestion(kind, text, subject) if text else None
    if match := _LINE_RE.match(body):
        if match[1]:
            kind, subject, text = match[1], (match[2] or "").strip(), match[3]
        else:
            kind, subject, text = match[4], "", match[5]
        text = text.strip()
        if not text or _NONE_RE.match(text):
            return None
        return Suggestion(kind.lower(), text, subject)
    return None


def suggestions_chosen(
    suggestions: Sequence[Suggestion],
    *,
    active: Iterable[str],
    pending: Iterable[str],
    cap: int,
) -> list[Suggestion]:
    """At most ``cap`` suggestions, pins first, none a near-duplicate of one known or chosen."""
    known = [text for text in (*active, *pending) if text]
    chosen: list[Suggestion] = []
    for suggestion in sorted(suggestions, key=lambda s: s.type != "pin"):
        if len(chosen) >= cap:
            break
        texts = known + [c.content for c in chosen]
        if any(word_overlap(suggestion.content, text) >= DUPLICATE_OVERLAP for text in texts):
            continue
        chosen.append(suggestion)
    return chosen
