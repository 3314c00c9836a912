"""What the weekly review finds in the active working memory: plans overdue, plans that clash,
and what is missing.

Pure: no Django, no I/O, no clock (the moment is given). The findings are given to the
Compass in the review's request, which proposes on its own from them:

- **overdue**: an active plan whose due has passed (the Heart never marked it done or
  cancelled);
- **clash**: two active plans still to come, due within ``CLASH_WINDOW`` of each other (a
  person cannot be at both);
- **undated**: an active plan with no due date (it never resurfaces on a curve of its own);
- **unplanned**: a pin or pattern no active plan shares a content word with (``gem.match``),
  the ``UNPLANNED_MAX`` strongest.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from gem.match import content_words
from silentstar.words import counted

CLASH_WINDOW = timedelta(hours=1)
UNPLANNED_MAX = 5
OVERDUE, CLASH, UNDATED, UNPLANNED = "overdue", "clash", "undated", "unplanned"


@dataclass(frozen=True)
class Item:
    """An active working-memory item as the Compass reads it."""

    id: int
    type: str
    content: str
    subject: str = ""
    due: datetime | None = None
    hidden: bool = False
    score: float = 0.0


@dataclass(frozen=True)
class Finding:
    kind: str
    items: tuple[Item, ...]
    text: str  # one line, as the request and the page say it


def findings_of(items: Sequence[Item], *, now: datetime, time_zone: str) -> list[Finding]:
    """The findings, overdue first, then clashes, undated plans and unplanned pins and
    patterns; each kind in the order of due dates, or of scores for the unplanned."""
    zone = ZoneInfo(time_zone)
    plans = [item for item in items if item.type == "plan"]
    dated = sorted((p for p in plans if p.due is not None), key=lambda p: (p.due, p.id))
    found = [
        Finding(
            OVERDUE,
            (plan,),
            f"{_named(plan)} was due {_when(plan.due, zone)}, and is "
            f"still active ({_ago(now - plan.due)} ago).",
        )
        for plan in dated
        if plan.due <= now
    ]
    found += [
        Finding(
            CLASH,
            (first, second),
            f"{_named(first)} (due {_when(first.due, zone)}) and {_named(second)} "
            f"(due {_when(second.due, zone)}) are due within an hour of each other.",
        )
        for first, second in clash_pairs([plan for plan in dated if plan.due > now])
    ]
    found += [
        Finding(UNDATED, (plan,), f"{_named(plan)} has no due date.")
        for plan in plans
        if plan.due is None
    ]
    planned = set().union(*(content_words(plan.content) for plan in plans))
    lingering = sorted(
        (item for item in items if item.type in ("pin", "pattern")),
        key=lambda item: (-item.score, item.id),
    )
    unplanned = [
        item
        for item in lingering
        if content_words(item.content) and not content_words(item.content) & planned
    ]
    found += [
        Finding(UNPLANNED, (item,), f"{_named(item)} (score {item.score:.2f}) has no plan for it.")
        for item in unplanned[:UNPLANNED_MAX]
    ]
    return found


def clash_pairs[T](coming: Sequence[T]) -> list[tuple[T, T]]:
    """The pairs of ``coming`` (plans in order of their ``due``) due within `CLASH_WINDOW` of
    each other, earlier first."""
    pairs = []
    for index, first in enumerate(coming):
        for second in coming[index + 1 :]:
            if second.due - first.due > CLASH_WINDOW:
                break
            pairs.append((first, second))
    return pairs


def findings_text(found: Sequence[Finding]) -> str:
    """The findings as the request gives them: one line each, or a line saying there are none."""
    if not found:
        return "Nothing is overdue, no plans clash, and nothing is missing a plan."
    return "\n".join(f"- {finding.kind}: {finding.text}" for finding in found)


def _named(item: Item) -> str:
    words = " ".join(item.content.split())
    hidden = " (hidden)" if item.hidden else ""
    return f"{item.type} wm {item.id}{hidden} “{words}”"


def _when(moment: datetime, zone: ZoneInfo) -> str:
    return f"{moment.astimezone(zone):%a %Y-%m-%d %H:%M}"


def _ago(span: timedelta) -> str:
    if span >= timedelta(days=2):
        return f"{span.days} days"
    hours = int(span.total_seconds() // 3600)
    if hours >= 1:
        return counted(hours, "hour")
    return f"{int(span.total_seconds() // 60)} minutes"
