"""What the Compass reads: what the Lens reads, at the consultation's moment, under a size cap.

The moment and the owner's time zone; the active plans with their due dates (hidden ones too,
marked: the Compass planned them), the pins and patterns that linger, each with its live decay
score (``lens.extract.working_memory_lingering``, scored as the Heart scores them); the newest
current summaries; and the fragments the question names (a word of it equal to a fragment's
key, or a key in brackets), as the Lens writes them (the draft format). Sections come in that
order and the whole is cut at ``READ_CHARS_MAX`` characters, the last sections first: a section
cut short says how many of its lines were left out.
"""

import re
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from compass.findings import Item
from gem.draft import Draft, draft_render
from gem.models import Fragment
from lens.extract import fragment_drafts, one_line, working_memory_lingering
from mirror.models import Summary
from mirror.selectors import summaries_stale
from silentstar.words import counted

READ_CHARS_MAX = 24_000  # about 6,000 tokens: room for the answer in any model's window
SUMMARIES_READ = 5
READ_TYPES = ("plan", "pin", "pattern")
KEY_CANDIDATE = re.compile(r"[\w][\w'-]*")

NOW, PLANS, PINS, PATTERNS = "Now", "Active plans", "Pins", "Patterns"
SUMMARIES, FRAGMENTS, FINDINGS, QUESTION = (
    "Recent summaries",
    "Fragments the question names",
    "Findings of the review",
    "The question",
)


@dataclass(frozen=True)
class Reading:
    """What a consultation reads: the items (for the review's findings) and the sections of
    its request, ``(title, body)`` pairs (a body left empty is a section with nothing to say,
    left out of the request)."""

    items: list[Item]
    sections: list[tuple[str, str]]


def compass_read(*, question: str, now: datetime, time_zone: str) -> Reading:
    zone = ZoneInfo(time_zone)
    _, lingering = working_memory_lingering(now=now)
    items = [
        Item(
            id=entry.row.id,
            type=entry.row.type,
            content=entry.row.content,
            subject=entry.row.subject,
            due=entry.row.due,
            hidden=entry.row.hidden,
            score=entry.score,
        )
        for entry in lingering
        if entry.row.type in READ_TYPES
    ]
    plans = sorted(
        (item for item in items if item.type == "plan"),
        key=lambda item: (item.due is None, item.due or now, item.id),
    )
    current = list(
        Summary.objects.filter(superseded_by__isnull=True).order_by("-created_at", "-id")
    )
    # One written before a correction of what it covers waits to be written again.
    stale = summaries_stale(
        (s.pk, s.first_event_id, s.last_event_id, s.created_at) for s in current
    )
    summaries = [summary for summary in current if summary.pk not in stale]
    sections = [
        (NOW, f"{now.astimezone(zone):%A %Y-%m-%d %H:%M} in {time_zone}, the owner's time zone."),
        (PLANS, _lines([_item_line(plan, zone) for plan in plans], "No active plans.")),
        *(
            (title, _lines([_item_line(i, zone) for i in items if i.type == kind], "None."))
            for title, kind in ((PINS, "pin"), (PATTERNS, "pattern"))
        ),
        (
            SUMMARIES,
            _lines(
                [
                    f"- {s.level} · events {s.first_event_id}–{s.last_event_id} · "
                    f"{s.created_at.astimezone(zone):%Y-%m-%d}: {one_line(s.content)}"
                    for s in summaries[:SUMMARIES_READ]
                ],
                "No summaries yet.",
            ),
        ),
        (FRAGMENTS, _fragments_named(question)),
    ]
    return Reading(items=items, sections=sections_capped(sections, READ_CHARS_MAX))


def keys_named(question: str) -> list[str]:
    """The keys of the fragments the question names, in the order it names them."""
    words = list(dict.fromkeys(word.lower() for word in KEY_CANDIDATE.findall(question)))
    known = set(Fragment.objects.filter(key__in=words).values_list("key", flat=True))
    return [word for word in words if word in known]


def _fragments_named(question: str) -> str:
    keys = keys_named(question)
    return draft_render(Draft(fragments=fragment_drafts(keys))).strip() if keys else ""


def _item_line(item: Item, zone: ZoneInfo) -> str:
    about = f" · {item.subject}" if item.subject else ""
    due = f" · due {item.due.astimezone(zone):%a %Y-%m-%d %H:%M}" if item.due else ""
    hidden = " · hidden until 48 h before due" if item.hidden else ""
    return f"- wm {item.id}{about}{due}{hidden} · score {item.score:.2f}: {one_line(item.content)}"


def _lines(lines: list[str], empty: str) -> str:
    return "\n".join(lines) if lines else empty


def sections_capped(sections: list[tuple[str, str]], limit: int) -> list[tuple[str, str]]:
    """The sections, whole while they fit in ``limit`` characters; then each cut to the lines
    that fit, with a line saying how many were left out (a section with no room left keeps
    only that line)."""
    kept, used = [], 0
    for title, body in sections:
        lines = body.splitlines()
        taken: list[str] = []
        for line in lines:
            if used + len(line) + 1 > limit:
                break
            taken.append(line)
            used += len(line) + 1
        if len(taken) < len(lines):
            left = len(lines) - len(taken)
            taken.append(f"({counted(left, 'more line')} left out for length)")
        kept.append((title, "\n".join(taken)))
    return kept
