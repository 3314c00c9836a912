"""What an imported text may be: one rule for every import (Mira's JSONL, an export, a legacy
database), so a file is refused alike on SQLite and on PostgreSQL, before anything is written.

- A text field holds at most its model field's ``max_length``, or ``TEXT_MAX_CHARS`` for a
  ``TextField``, which has none of its own. The chat's message limit is 20,000 characters and
  a companion's reply a few thousand; ten times the message limit keeps any real memory and
  refuses a runaway one (a 50 MB entry took 35 s and 1.5 GB to import).
- No text holds NUL (``\\x00``): PostgreSQL cannot store it, in a text column or in JSON. The
  check is Django's ``ProhibitNullCharactersValidator``, the one the chat form runs.
- A JSONL line is read ``LINE_MAX_CHARS`` at a time at most, so one huge line is never read
  whole; room for a row of many fields at their limit, written with escapes.
- A JSON value nests lists and objects ``DEPTH_MAX`` levels deep at most. Real files nest under
  twenty; a deeper one is refused before anything walks it, and every walk here keeps its own
  stack, since Python's recursion (``json.dumps`` included) stops about a thousand levels down.
"""

import json
from collections.abc import Iterator
from typing import TextIO

from django.core.exceptions import ValidationError
from django.core.validators import ProhibitNullCharactersValidator
from django.db import models

TEXT_MAX_CHARS = 200_000
LINE_MAX_CHARS = 4_000_000
DEPTH_MAX = 64
DEPTH_PROBLEM = (
    f"nested too deeply (lists and objects more than {DEPTH_MAX} levels inside one another; "
    f"at most {DEPTH_MAX} are read)"
)
NUL_REFUSED = ProhibitNullCharactersValidator()


def text_max(field: models.Field) -> int:
    """The most characters an import puts into ``field``."""
    return field.max_length or TEXT_MAX_CHARS


def text_problem(value: str, *, limit: int = TEXT_MAX_CHARS) -> str | None:
    """What keeps ``value`` out of a text field of ``limit`` characters, or None."""
    try:
        NUL_REFUSED(value)
    except ValidationError:
        return "holds a NUL character (\\x00), which PostgreSQL cannot store"
    if len(value) > limit:
        return f"is {len(value):,} characters long; at most {limit:,} are imported"
    return None


def json_problem(value) -> str | None:
    """What keeps a JSON value (its keys and texts, at any depth) out of a JSON field, or None:
    the first text at fault in the order the value is written, or a nesting past ``DEPTH_MAX``."""
    stack = [(value, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, str):
            if problem := text_problem(value):
                return problem
            continue
        if isinstance(value, dict):
            parts = [each for pair in value.items() for each in pair]
        elif isinstance(value, list):
            parts = value
        else:
            continue
        if depth == DEPTH_MAX:
            return DEPTH_PROBLEM
        stack.extend((part, depth + 1) for part in reversed(parts))
    return None


def json_depth(value) -> int:
    """How many levels of lists and objects ``value`` nests: 0 for a text, a number, true, false
    or null; 1 for a list or object of those; and so on. Walked with a stack of its own, so no
    depth is too deep to measure."""
    deepest = 0
    stack = [(value, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            parts = value.values()
        elif isinstance(value, list):
            parts = value
        else:
            continue
        depth += 1
        deepest = max(deepest, depth)
        stack.extend((part, depth) for part in parts if isinstance(part, dict | list))
    return deepest


def lines_bounded(
    stream: TextIO, *, limit: int = LINE_MAX_CHARS
) -> Iterator[tuple[int, str | None]]:
    """Each line of a text stream with its number (from 1), read ``limit`` characters at a
    time at most. A longer line is passed over in pieces and comes as None: the caller refuses
    it, naming its number."""
    number = 0
    while line := stream.readline(limit + 1):
        number += 1
        if len(line) <= limit or line.endswith("\n"):
            yield number, line
            continue
        while (rest := stream.readline(limit)) and not rest.endswith("\n"):
            pass
        yield number, None


class NestedTooDeep(ValueError):
    """A JSON text nesting lists and objects past ``DEPTH_MAX``; its message says so."""


def json_loaded(text: str) -> object:
    """``json.loads``, refusing with ``NestedTooDeep`` a value that nests past ``DEPTH_MAX`` (or
    too deep for ``json.loads`` itself). Its depth is walked only when the text has more brackets
    than ``DEPTH_MAX``, which few lines have."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise NestedTooDeep(DEPTH_PROBLEM) from None
    if text.count("[") + text.count("{") > DEPTH_MAX and json_depth(value) > DEPTH_MAX:
        raise NestedTooDeep(DEPTH_PROBLEM)
    return value
