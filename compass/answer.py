"""The Compass's answer: its reasoning in prose, then its proposals as one fenced JSON list.

Pure: no Django, no I/O, no clock (the moment is given). The shape the prompts ask for::

    Reasoning, in prose…

    ```json
    [{"plan": "Run 5 km", "due": "2026-12-01T07:30", "why": "The first step.", "hidden": false}]
    ```

The last fenced block is the list; what comes before it is the reasoning. Each proposal has
``plan`` (what to do), ``due`` (a local date-time, ``YYYY-MM-DDTHH:MM``, or words such as
"friday at 5pm"), ``why`` and, optionally, ``hidden`` (false unless given). A due is read in the
owner's time zone relative to the consultation's moment: a date-time without an offset is the
owner's wall-clock time, one with an offset is that moment, a date alone is the start of that
day, and words are read as a plan's own words are (``gem.due``).

An answer is taken whole or not at all: any fault (no list, broken JSON, a field missing or of
the wrong kind, a field the format does not know, a due that cannot be read or is not after the
moment) raises ``AnswerError`` naming the proposal and what is wrong, and nothing of it is
staged.
"""

import json
import re
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from gem.due import due_from_text
from silentstar.words import moment_said

PROPOSALS_MAX = 12  # more than a person can weigh at once: the answer is refused
PLAN_CHARS_MAX = 500
FIELDS = ("plan", "due", "why", "hidden")
REQUIRED = ("plan", "due", "why")

_FENCE_RE = re.compile(r"```[ \t]*([A-Za-z]*)[ \t]*\r?\n(.*?)```", re.DOTALL)


class AnswerError(ValueError):
    """An answer that cannot be taken, and why, in words a person can act on."""


@dataclass(frozen=True)
class Proposed:
    """One plan the Compass proposes, its due read and checked."""

    plan: str
    due: datetime
    why: str
    hidden: bool = False


@dataclass(frozen=True)
class Answer:
    reasoning: str
    proposals: tuple[Proposed, ...]


def answer_parse(text: str, *, now: datetime, time_zone: str) -> Answer:
    """The reasoning and the proposals of ``text``, every due after ``now``; AnswerError
    otherwise."""
    fences = list(_FENCE_RE.finditer(text))
    if not fences:
        raise AnswerError(
            "The answer has no fenced JSON list of proposals (```json … ```) after its reasoning."
        )
    fence = fences[-1]
    reasoning = text[: fence.start()].strip()
    try:
        rows = json.loads(fence.group(2))
    except json.JSONDecodeError as error:
        raise AnswerError(
            f"The list of proposals is not valid JSON: {error.msg} at line {error.lineno}, "
            f"column {error.colno} of the list."
        ) from error
    if not isinstance(rows, list):
        raise AnswerError(f"The proposals must be a JSON list of objects, not {_kind_of(rows)}.")
    if len(rows) > PROPOSALS_MAX:
        raise AnswerError(
            f"The answer proposes {len(rows)} plans; at most {PROPOSALS_MAX} are taken."
        )
    proposals = tuple(
        _proposal(row, number, now=now, time_zone=time_zone)
        for number, row in enumerate(rows, start=1)
    )
    return Answer(reasoning=reasoning, proposals=proposals)


def _proposal(row: object, number: int, *, now: datetime, time_zone: str) -> Proposed:
    if not isinstance(row, dict):
        raise AnswerError(
            f"Proposal {number} is {_kind_of(row)}, not an object with "
            f"{', '.join(REQUIRED)} and hidden."
        )
    unknown = [name for name in row if name not in FIELDS]
    if unknown:
        names = ", ".join(f"“{name}”" for name in unknown)
        raise AnswerError(
            f"Proposal {number} has fields the format does not know: {names} "
            f"(it knows {', '.join(FIELDS)})."
        )
    for name in REQUIRED:
        if name not in row:
            raise AnswerError(f"Proposal {number} has no “{name}”.")
        if not isinstance(row[name], str) or not row[name].strip():
            raise AnswerError(f"Proposal {number}’s “{name}” must be some text.")
    plan = " ".join(row["plan"].split())
    if len(plan) > PLAN_CHARS_MAX:
        raise AnswerError(
            f"Proposal {number}’s plan is {len(plan)} characters long; at most "
            f"{PLAN_CHARS_MAX} are taken."
        )
    hidden = row.get("hidden", False)
    if not isinstance(hidden, bool):
        raise AnswerError(f"Proposal {number} (“{plan}”): “hidden” must be true or false.")
    named = f"Proposal {number} (“{plan}”)"
    due = due_read(row["due"], now=now, time_zone=time_zone)
    if due is None:
        raise AnswerError(f"{named}: its due “{row['due'].strip()}” cannot be read as a date.")
    if due <= now:
        zone = ZoneInfo(time_zone)
        raise AnswerError(
            f"{named} is due {moment_said(due.astimezone(zone))}, which is not after "
            f"{moment_said(now.astimezone(zone))} ({time_zone}), the consultation's moment."
        )
    return Proposed(plan=plan, due=due, why=row["why"].strip(), hidden=hidden)


def due_read(text: str, *, now: datetime, time_zone: str) -> datetime | None:
    """The moment a proposal's ``due`` names, in ``time_zone``; None when it names none."""
    zone = ZoneInfo(time_zone)
    words = text.strip()
    try:
        moment = datetime.fromisoformat(words)
    except ValueError:
        return due_from_text(words, written_at=now, time_zone=time_zone)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=zone)
    return moment.astimezone(zone)


def _kind_of(value: object) -> str:
    return {
        dict: "an object",
        list: "a list",
        str: "a text",
        bool: "true or false",
        int: "a number",
        float: "a number",
        type(None): "null",
    }.get(type(value), type(value).__name__)


def due_written(moment: datetime, *, time_zone: str) -> str:
    """A due as the format writes it: the owner's local date and time, to the minute."""
    return moment.astimezone(ZoneInfo(time_zone)).strftime("%Y-%m-%dT%H:%M")


def answer_render(reasoning: str, rows: list[dict]) -> str:
    """An answer in the format: the reasoning, then the proposals (``{plan, due, why,
    hidden}`` objects) as a fenced JSON list."""
    listed = json.dumps(rows, ensure_ascii=False, indent=2)
    return f"{reasoning.strip()}\n\n```json\n{listed}\n```\n"
