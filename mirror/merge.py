"""Which summaries are due to merge (every three L0 into an L1, every three L1 into an L2), and
which of them stand in the context for the time before the Recent window.

Pure: plain tuples in, plain tuples out. A summary is *merged* once a current summary of the next
level covers its range; the unmerged ones of a level, oldest first, merge in threes, a group of
three consecutive ones at a time (only whole groups). A merged summary keeps its own row: merging
is not superseding (that word is for a summary replaced by a rebuild of the same range).
"""

import math
from bisect import bisect_left, bisect_right
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
    """The summaries to show for what is older than event ``before`` (the Recent window's first
    event), newest first, never overlapping one another, reaching back as far as the ``budget``
    (in the unit of ``Span.tokens``) allows, finest nearest to Recent and coarser further back.

    1. Reach: a chain of summaries walking back from the event just before ``before``. Each step
       takes, of the summaries covering the newest event not yet covered and overlapping none
       taken so far, the coarsest that fits what is left of the budget (else the walk ends) and
       costs no more than the finest summaries covering its events (else it would reach less far
       than they do).
       Where summaries leave a stretch uncovered, the walk goes on behind it, so no time a
       summary covers is jumped over. The first step may also take a coarser summary that reaches
       into Recent; it is tried with each of the summaries covering that first event, and the
       one whose chain reaches furthest back is taken (the finest, when they reach as far).
       Later steps take only summaries ending before ``before``, so a coarse summary never
       repeats what Recent shows when a finer one would do.
    2. Detail: what is left of the budget turns the summaries nearest to Recent into the next
       finer level of summaries covering the same events, newest first, while the finer ones fit.

    When not even the finest first one fits, it is returned alone (``heart.assemble`` cuts it to
    the budget). Without ``budget``, the finest are taken everywhere.
    """
    left = math.inf if budget is None else budget
    behind = [s for s in summaries if s.first_event_id < before]
    if not behind:
        return []
    index = _Levels(behind)
    newest = min(before - 1, max(s.last_event_id for s in behind))
    firsts = index.covering(newest, end=math.inf)
    if firsts[0].tokens > left:
        return [firsts[0]]
    if budget is None:  # everything fits: the finest everywhere
        firsts = firsts[:1]
    chains = [
        _chain(index, first, before=before, left=left, coarse=budget is not None)
        for first in firsts
    ]
    chain = min(filter(None, chains), key=lambda chain: chain[-1].first_event_id)  # finest first
    left -= sum(s.tokens for s in chain)
    at = 0
    while at < len(chain):
        outer = chain[at]
        finer = index.cover(outer, finest=False)
        cost = sum(s.tokens for s in finer) - outer.tokens
        if finer and cost <= left:
            chain[at : at + 1] = finer
            left -= cost
            if cost < 0:  # finer and cheaper: what it frees may refine a newer one passed over
                at = 0
            continue  # the finer ones may be refined in turn, the newest first
        at += 1
    return chain


def _chain(index: "_Levels", first: Span, *, before: int, left: float, coarse: bool) -> list[Span]:
    """``first``, then the coarsest summary that fits at each step back (see step 1 above), or
    the finest when not ``coarse``."""
    chain: list[Span] = []
    pick: Span | None = first
    while pick is not None and pick.tokens <= left:
        chain.append(pick)
        left -= pick.tokens
        newest = index.newest_before(pick.first_event_id)
        if newest is None:
            break
        finest, *coarser = index.covering(newest, end=pick.first_event_id)
        coarser = [s for s in coarser if coarse and s.last_event_id < before and index.thrifty(s)]
        options = [finest, *coarser]
        pick = next((s for s in reversed(options) if s.tokens <= left), None)
    return chain


class _Levels:
    """The summaries of each level sorted by their last event, for the walk's lookups: a turn's
    choice reads a handful of them out of thousands."""

    def __init__(self, summaries: Sequence[Span]):
        groups: dict[tuple[int, str], list[Span]] = {}
        for span in summaries:
            groups.setdefault(_rank(span.level), []).append(span)
        self.ranks = sorted(groups)
        self.spans = {
            rank: sorted(group, key=lambda s: (s.last_event_id, -s.first_event_id, s.id))
            for rank, group in groups.items()
        }
        self.lasts = {rank: [s.last_event_id for s in group] for rank, group in self.spans.items()}
        self.longest = {
            rank: max(s.last_event_id - s.first_event_id for s in group)
            for rank, group in self.spans.items()
        }
        self._finest: dict[Span, list[Span]] = {}

    def newest_before(self, end: int) -> int | None:
        """The last event of the newest summary ending before event ``end``."""
        found = [lasts[at - 1] for lasts in self.lasts.values() if (at := bisect_left(lasts, end))]
        return max(found, default=None)

    def covering(self, event: int, *, end: float) -> list[Span]:
        """The summaries covering ``event`` and ending before ``end``, one a level, finest
        first; of a level the one reaching least far past the event, then the longest, then the
        lowest id."""
        found = []
        for rank in self.ranks:
            spans, lasts = self.spans[rank], self.lasts[rank]
            for at in range(bisect_left(lasts, event), len(spans)):
                span = spans[at]
                if span.last_event_id >= end or span.last_event_id > event + self.longest[rank]:
                    break
                if span.first_event_id <= event:
                    found.append(span)
                    break
        return found

    def cover(self, outer: Span, *, finest: bool) -> list[Span]:
        """The summaries of the next finer level (with ``finest``, of the finest level) that
        together cover exactly ``outer``'s events, newest first; none when that level leaves
        part of them uncovered."""
        if finest and outer in self._finest:
            return self._finest[outer]
        inside_by_rank = {
            rank: inside
            for rank in self.ranks
            if rank < _rank(outer.level) and (inside := self._inside(outer, rank))
        }
        cover: list[Span] = []
        if inside_by_rank:
            rank = (min if finest else max)(inside_by_rank)
            reached = outer.last_event_id + 1
            for span in sorted(
                inside_by_rank[rank], key=lambda s: (-s.last_event_id, s.first_event_id, s.id)
            ):
                if span.last_event_id == reached - 1:
                    cover.append(span)
                    reached = span.first_event_id
            cover = cover if reached == outer.first_event_id else []
        if finest:
            self._finest[outer] = cover
        return cover

    def thrifty(self, span: Span) -> bool:
        """A coarser summary costs no more than the finest ones covering its events."""
        finest = self.cover(span, finest=True)
        return not finest or span.tokens <= sum(s.tokens for s in finest)

    def _inside(self, outer: Span, rank: tuple[int, str]) -> list[Span]:
        spans, lasts = self.spans[rank], self.lasts[rank]
        start, end = (
            bisect_left(lasts, outer.first_event_id),
            bisect_right(lasts, outer.last_event_id),
        )
        return [s for s in spans[start:end] if s.first_event_id >= outer.first_event_id]


def _rank(level: str) -> tuple[int, str]:
    """Finest first: L0, L1, L2, then any other level by name."""
    return (LEVELS.index(level), "") if level in LEVELS else (len(LEVELS), level)
