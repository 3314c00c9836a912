"""The offline Compass: a placeholder answer when neither an API key nor a local model server is
set, so every flow of the Compass can be tried on a laptop.

Pure and deterministic: no Django, no I/O, no clock (the moment is given). It answers in the
Compass's own format (``compass.answer``), so the same parser and everything after it run
unchanged, and every part of it says it is offline. It thinks nothing through:

- a consultation gets three plans made from the question's words, due 1, 3 and 7 days after
  the consultation's moment (same time of day, in the owner's time zone);
- a review gets one plan per finding (``compass.findings``): reschedule what is overdue, move
  one of two clashing plans, date an undated plan, plan for a pin or pattern with none.
"""

import re
from collections.abc import Sequence
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from compass.answer import answer_render, due_written
from compass.findings import CLASH, OVERDUE, UNDATED, Finding
from gem.words import STOP_WORDS

OFFLINE_LABEL = "(offline Compass)"
TOPIC_WORDS = 8
CONSULT_DAYS = (1, 3, 7)
CONSULT_STEPS = ("Begin", "Keep going", "Look back on")
REVIEW_DAYS = {OVERDUE: 1, CLASH: 2, UNDATED: 3}
UNPLANNED_DAYS = 7

_WORD_RE = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")


def topic_of(question: str) -> str:
    """The question's first content words, in its order, lower case."""
    words = []
    for word in _WORD_RE.findall(question):
        folded = word.casefold()
        if folded not in STOP_WORDS and folded not in words:
            words.append(folded)
    return " ".join(words[:TOPIC_WORDS]) or "what was asked"


def consult_answer(question: str, *, now: datetime, time_zone: str) -> str:
    topic = topic_of(question)
    reasoning = (
        f"{OFFLINE_LABEL} No API key is set, so the Compass thought nothing through: these "
        f"are three placeholder plans made from the question's words (“{topic}”), due in "
        f"{', '.join(map(str, CONSULT_DAYS[:-1]))} and {CONSULT_DAYS[-1]} days. Set "
        "ANTHROPIC_API_KEY (or SILENTSTAR_LOCAL_BASE_URL, for a local model) for the Compass's "
        "own reasoning."
    )
    rows = [
        {
            "plan": f"{step}: {topic}",
            "due": _after(now, days, time_zone),
            "why": f"{OFFLINE_LABEL} A placeholder, {days} day{'s' if days != 1 else ''} on.",
            "hidden": False,
        }
        for step, days in zip(CONSULT_STEPS, CONSULT_DAYS, strict=True)
    ]
    return answer_render(reasoning, rows)


def review_answer(found: Sequence[Finding], *, now: datetime, time_zone: str) -> str:
    reasoning = (
        f"{OFFLINE_LABEL} No API key is set, so the review proposes one placeholder plan per "
        f"finding ({len(found)}), thought through by nobody."
    )
    rows = []
    for finding in found:
        first = " ".join(finding.items[0].content.split())
        if finding.kind == OVERDUE:
            plan = f"Reschedule: {first}"
        elif finding.kind == CLASH:
            second = " ".join(finding.items[1].content.split())
            plan = f"Move one of: {first} / {second}"
        elif finding.kind == UNDATED:
            plan = f"Set a date for: {first}"
        else:
            plan = f"Plan something for: {first}"
        days = REVIEW_DAYS.get(finding.kind, UNPLANNED_DAYS)
        rows.append(
            {
                "plan": plan,
                "due": _after(now, days, time_zone),
                "why": f"{OFFLINE_LABEL} {finding.text}",
                "hidden": False,
            }
        )
    return answer_render(reasoning, rows)


def _after(now: datetime, days: int, time_zone: str) -> str:
    """``days`` days after ``now`` on the owner's calendar, same time of day, to the minute."""
    local = now.astimezone(ZoneInfo(time_zone))
    return due_written(local + timedelta(days=days), time_zone=time_zone)
