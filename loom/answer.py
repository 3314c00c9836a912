"""A facet agent's answer, read: its notes, its draft and (the Weaver's) pattern suggestions.

Pure: no Django, no I/O. The answer is plain text in sections, each opened by a marker line::

    === notes ===
    What the agent saw, doubts, what it could not check (free text, shown to the person).

    === draft ===
    # fairy

    ## inventory

    A brass lantern, dented on one side.

    === patterns ===
    - She names every lamp after a star.
      reason: three fragments say so

The draft section holds a draft in the draft format (``gem/draft.py``), read there; it
may be empty (notes only). Text before the first marker counts as notes (a model's preamble is
kept, not refused). Each pattern is a list item, optionally followed by an indented
``reason:`` line. Only the Weaver may write a patterns section. Anything else (a second marker
of one kind, an unknown marker, a pattern line that is no list item, no draft marker at all)
is an ``AnswerError`` naming the line of the answer.
"""

import re
from dataclasses import dataclass, field

NOTES = "notes"
DRAFT = "draft"
PATTERNS = "patterns"
MARKERS = (NOTES, DRAFT, PATTERNS)
MARKER = re.compile(r"^\s*===\s*([A-Za-z ]+?)\s*===\s*$")
PATTERN_ITEM = re.compile(r"^[-*][ \t]+(\S.*)$")
REASON = re.compile(r"^[ \t]+(?:reason|why)[ \t]*:[ \t]*(.*)$", re.IGNORECASE)
PATTERN_MAX_CHARS = 2000


class AnswerError(ValueError):
    """An answer that cannot be read: what is wrong and on which line (1-based)."""

    def __init__(self, message: str, *, line: int | None = None):
        self.line = line
        super().__init__(f"line {line} of the answer: {message}" if line else message)


@dataclass(frozen=True)
class Pattern:
    content: str
    reason: str = ""


@dataclass
class Answer:
    notes: str = ""
    draft: str = ""
    draft_line: int = 0  # the answer's line just before the draft's first line
    patterns: list[Pattern] = field(default_factory=list)


def answer_read(text: str, *, patterns_allowed: bool) -> Answer:
    """Split an answer into its sections; AnswerError when it does not have their shape."""
    lines = text.replace("\r\n", "\n").split("\n")
    bodies: dict[str, list[str]] = {NOTES: []}
    starts: dict[str, int] = {}
    current = NOTES
    for number, line in enumerate(lines, start=1):
        match = MARKER.match(line)
        if match is None:
            bodies[current].append(line)
            continue
        name = match[1].strip().lower()
        if name not in MARKERS:
            raise AnswerError(
                f"“{line.strip()}” is not a section (the sections are "
                + ", ".join(f"=== {m} ===" for m in MARKERS)
                + ")",
                line=number,
            )
        if name in starts:
            raise AnswerError(f"a second “=== {name} ===”", line=number)
        if name == PATTERNS and not patterns_allowed:
            raise AnswerError("only the Weaver proposes patterns", line=number)
        starts[name] = number
        current = name
        bodies.setdefault(name, [])
    if DRAFT not in starts:
        raise AnswerError("the answer has no “=== draft ===” line, so it holds no draft")
    return Answer(
        notes="\n".join(bodies[NOTES]).strip(),
        draft="\n".join(bodies[DRAFT]).strip("\n"),
        draft_line=starts[DRAFT] + _leading_blank(bodies[DRAFT]),
        patterns=_patterns(bodies.get(PATTERNS, []), first_line=starts.get(PATTERNS, 0) + 1),
    )


def _leading_blank(lines: list[str]) -> int:
    count = 0
    while count < len(lines) and not lines[count].strip():
        count += 1
    return count


def _patterns(lines: list[str], *, first_line: int) -> list[Pattern]:
    found: list[Pattern] = []
    for number, line in enumerate(lines, start=first_line):
        if not line.strip():
            continue
        reason = REASON.match(line)
        if reason and found and not found[-1].reason:
            found[-1] = Pattern(found[-1].content, reason[1].strip())
            continue
        item = PATTERN_ITEM.match(line.strip())
        if item is None:
            raise AnswerError(
                f"“{line.strip()}” is not a pattern: write “- the pattern” and, on the next "
                "line, indented, “reason: why”",
                line=number,
            )
        content = item[1].strip()
        if len(content) > PATTERN_MAX_CHARS:
            raise AnswerError(
                f"a pattern is longer than {PATTERN_MAX_CHARS} characters", line=number
            )
        found.append(Pattern(content))
    return found
