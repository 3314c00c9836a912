"""A number said with its noun, the one way the project says "1 turn" and "2 turns", and a
moment the one way a person reads it, "6 Dec 2026, 04:34".

Pure: standard library only, no Django, so the assembler, the Mirror's offline passes, the
Compass's checks and the pages all say counts and moments the same way.
"""

from datetime import datetime


def counted(number: int, one: str, many: str = "") -> str:
    """``number`` and its noun, singular for exactly one: "1 turn", "0 turns", "1,200 turns";
    ``many`` for a plural not made with an "s" ("summaries", "notes over the limit")."""
    return f"{number:,} {one if number == 1 else many or one + 's'}"


MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def moment_said(moment: datetime, *, year: bool = True) -> str:
    """A moment as a person reads it, the one format, in the zone ``moment`` carries: "6 Dec
    2026, 04:34", or "6 Dec, 04:34" without the year. Django's pages say it the same way
    (``DATETIME_FORMAT``, ``silentstar/formats/en/formats.py``); ``silentstar.when`` puts a
    moment in the owner's zone first."""
    day = f"{moment.day} {MONTHS[moment.month - 1]}"
    return f"{day} {moment.year}, {moment:%H:%M}" if year else f"{day}, {moment:%H:%M}"


def quoted(text: str) -> str:
    """``text`` in quotation marks, the quotation marks inside it made single so that none is
    nested in its like: “3 fragments from the character card ‘Sable’”."""
    return f"“{text.replace('“', '‘').replace('”', '’')}”"


def cut_words(text: str, limit: int = 60) -> str:
    """``text`` on one line, cut to at most ``limit`` characters at a word's end with "…":
    how a message names something a person wrote ("Forgot “the blue kettle…”")."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if " " in cut and not text[limit - 1].isspace():
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;:.") + "…"
