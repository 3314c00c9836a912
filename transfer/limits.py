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
"""

from collections.abc import Iterator
from typing import TextIO

from django.core.exceptions import ValidationError
from django.core.validators import ProhibitNullCharactersValidator
from django.db import models

TEXT_MAX_CHARS = 200_000
LINE_MAX_CHARS = 4_000_000
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
    """What keeps a JSON value (its keys and texts, at any depth) out of a JSON field, or None."""
    if isinstance(value, str):
        return text_problem(value)
    if isinstance(value, dict):
        parts = [each for pair in value.items() for each in pair]
    elif isinstance(value, list):
        parts = value
    else:
        return None
    return next((problem for part in parts if (problem := json_problem(part))), None)


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
