"""Which summaries are due to merge: every three L0 into an L1, every three L1 into an L2.

Pure: plain tuples in, plain tuples out. A summary is *merged* once a current summary of the next
level covers its range; the unmerged ones of a level, oldest first, merge in threes, a group of
three consecutive ones at a time (only whole groups). A merged summary keeps its own row: merging
is not superseding (that word is for a summary replaced by a rebuild of the same range).
"""

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


PER_LEVEL = 3  # at most this many of a level before a coarser one that ends there is preferred


def summaries_for_context(summaries: Sequence[Span], *, before: int) -> list[Span]:
    """The summaries to show for what is older than event ``before`` (the Recent window's oldest
    event), newest first, never overlapping one another.

    Walking back from ``before``: the first is the one reaching furthest towards the window among
    those that start before it (once its first turn has fallen out of Recent a summary shows);
    each next one ends before the previous one starts, so there are no gaps. Where several end at
    the same event (an L1 and the last of its L0s), the finest is taken whose level stays within
    ``PER_LEVEL`` summaries counting all of it the walk would then need back to the start of the
    coarser one; else the coarsest. So the newest stretch is in L0, older time in L1, then L2.
    """
    chosen: list[Span] = []
    counts = dict.fromkeys(LEVELS, 0)
    options = [s for s in summaries if s.first_event_id < before]
    while options:
        latest = max(s.last_event_id for s in options)
        ending = sorted((s for s in options if s.last_event_id == latest), key=_level_rank)
        pick = ending[-1]
        for finer, coarser in zip(ending, [*ending[1:], None], strict=True):
            # Taking the finer one commits to its level back to where the coarser one starts.
            needed = 1
            if coarser is not None:
                needed = sum(1 for s in summaries if s.level == finer.level and covers(coarser, s))
            if counts.get(finer.level, 0) + needed <= PER_LEVEL:
                pick = finer
                break
        chosen.append(pick)
        counts[pick.level] = counts.get(pick.level, 0) + 1
        options = [s for s in summaries if s.last_event_id < pick.first_event_id]
    return chosen


def _level_rank(summary: Span) -> tuple[int, int]:
    rank = LEVELS.index(summary.level) if summary.level in LEVELS else len(LEVELS)
    return rank, summary.id
