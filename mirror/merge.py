"""Which summaries are due to merge (every three L0 into an L1, every three L1 into an L2), and
which of them stand in the context for the time before the Recent window.

Pure: plain tuples in, plain tuples out. A summary is *merged* once a current summary of the next
level covers its range; the unmerged ones of a level, oldest first, merge in threes, a group of
three consecutive ones at a time (only whole groups). A merged summary keeps its own row: merging
is not superseding (that word is for a summary replaced by a rebuild of the same range).
"""

import itertools
import math
from collections.abc import Sequence
from typing import NamedTuple

LEVELS = ("L0", "L1", "L2")
NEXT_LEVEL = {"L0": "L1", "L1": "L2"}
GROUP = 3


class Span(NamedTuple):
    id: int
    level: str
    first_event_id: int
    last_event_id: int
    tokens: int = 0  # what it takes of the context's summaries budget, when that matters


def covers(outer: Span, inner: Span) -> bool:
    return (
        outer.first_event_id <= inner.first_event_id and inner.last_event_id <= outer.last_event_id
    )


def unmerged(summaries: Sequence[Span], level: str) -> list[Span]:
    """The current summaries of ``level`` no summary of the next level covers, oldest first."""
    upper = [s for s in summaries if s.level == NEXT_LEVEL.get(level)]
    own = sorted((s for s in summaries if s.level == level), key=lambda s: (s.first_event_id, s.id))
    return [s for s in own if not any(covers(u, s) for u in upper)]


def merges_due(summaries: Sequence[Span], level: str) -> list[tuple[Span, ...]]:
    """The whole groups of three unmerged ``level`` summaries, oldest first."""
    if level not in NEXT_LEVEL:
        return []
    waiting = unmerged(summaries, level)
    return [
        tuple(waiting[start : start + GROUP]) for start in range(0, len(waiting) - GROUP + 1, GROUP)
    ]


def summaries_for_context(
    summaries: Sequence[Span], *, before: int, budget: int | None = None
) -> list[Span]:
    """The summaries to show for what is older than event ``before`` (the Recent window's oldest
    event), newest first, never overlapping one another.

    Walking back from ``before``, each step finds the newest event that lies before ``before``
    and before every summary taken so far, and that a summary overlapping none of them covers.
    Of the summaries covering it, the finest is taken. A coarser one is taken instead only when
    it ends before ``before`` and the ``budget`` (in the unit of ``Span.tokens``) calls for it:
    it fits what is left, and the summaries of the next finer level inside it would not. So the
    time just before Recent is shown as finely as the budget allows and older time coarser, and
    a summary reaching into Recent comes in only when nothing finer covers the time before it.

    The walk stops after the first summary that does not fit what is left: ``heart.assemble``
    takes summaries newest first and ends its choice there too. Without ``budget`` the finest
    are taken everywhere.
    """
    chosen: list[Span] = []
    left = math.inf if budget is None else budget
    candidates = [s for s in summaries if s.first_event_id < before]
    newest = before - 1
    while candidates:
        newest = min(newest, max(s.last_event_id for s in candidates))
        covering = [s for s in candidates if s.first_event_id <= newest <= s.last_event_id]
        pick = _finest_affordable(summaries, covering, before=before, left=left)
        chosen.append(pick)
        if pick.tokens > left:
            break
        left -= pick.tokens
        candidates = [s for s in candidates if s.last_event_id < pick.first_event_id]
    return chosen


def _finest_affordable(
    summaries: Sequence[Span], covering: Sequence[Span], *, before: int, left: float
) -> Span:
    """Of the summaries covering one event, the finest, or a coarser one the budget calls for."""
    by_level: dict[tuple[int, str], Span] = {}
    # One a level, finest level first; within a level the one reaching least far past the
    # event, then the shortest, then the lowest id.
    for span in sorted(
        covering, key=lambda s: (_rank(s.level), s.last_event_id, -s.first_event_id, s.id)
    ):
        by_level.setdefault(_rank(span.level), span)
    finest, *coarser = by_level.values()
    # A coarser one reaching into Recent would repeat turns Recent shows that finer ones cover.
    options = [finest, *(s for s in coarser if s.last_event_id < before)]
    for finer, outer in itertools.pairwise(options):
        inside = sum(s.tokens for s in summaries if s.level == finer.level and covers(outer, s))
        if inside <= left or outer.tokens > left:
            return finer
    return options[-1]


def _rank(level: str) -> tuple[int, str]:
    """Finest first: L0, L1, L2, then any other level by name."""
    return (LEVELS.index(level), "") if level in LEVELS else (len(LEVELS), level)
