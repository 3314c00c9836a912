"""Which summaries are due to merge (every three L0 into an L1, every three L1 into an L2), and
which of them stand in the context for the time before the Recent window.

Pure: plain tuples in, plain tuples out. A summary is *merged* once a current summary of the next
level covers its range; the unmerged ones of a level, oldest first, merge in threes, a group of
three consecutive ones at a time (only whole groups). A merged summary keeps its own row: merging
is not superseding (that word is for a summary replaced by a rebuild of the same range).
"""

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
    candidates = [s for s in summaries if s.first_event_id < before]
    if not candidates:
        return []
    newest = min(before - 1, max(s.last_event_id for s in candidates))
    firsts = _covering(candidates, newest)
    if firsts[0].tokens > left:
        return [firsts[0]]
    chains = [_chain(summaries, first, before=before, left=left) for first in firsts]
    chain = min(
        filter(None, chains), key=lambda chain: chain[-1].first_event_id
    )  # the first such: finest
    left -= sum(s.tokens for s in chain)
    index = 0
    while index < len(chain):
        outer = chain[index]
        finer = _finer_cover(summaries, outer)
        cost = sum(s.tokens for s in finer) - outer.tokens
        if finer and cost <= left:
            chain[index : index + 1] = finer
            left -= cost
            continue  # the finer ones may be refined in turn, the newest first
        index += 1
    return chain


def _chain(summaries: Sequence[Span], first: Span, *, before: int, left: float) -> list[Span]:
    """``first``, then the coarsest summary that fits at each step back (see step 1 above)."""

    def _thrifty(span: Span) -> bool:
        """A coarser summary costs no more than the finest ones covering its events."""
        finest = _finest_cover(summaries, span)
        return not finest or span.tokens <= sum(s.tokens for s in finest)

    candidates = [s for s in summaries if s.first_event_id < before]
    chain: list[Span] = []
    pick: Span | None = first
    newest = first.last_event_id
    while pick is not None and pick.tokens <= left:
        chain.append(pick)
        left -= pick.tokens
        candidates = [s for s in candidates if s.last_event_id < pick.first_event_id]
        if not candidates:
            break
        newest = min(newest, max(s.last_event_id for s in candidates))
        finest, *coarser = _covering(candidates, newest)
        options = [finest, *(s for s in coarser if s.last_event_id < before and _thrifty(s))]
        pick = next((s for s in reversed(options) if s.tokens <= left), None)
    return chain


def _covering(candidates: Sequence[Span], event: int) -> list[Span]:
    """The summaries covering one event, one a level, finest first; of a level the one reaching
    least far past the event, then the shortest, then the lowest id."""
    by_level: dict[tuple[int, str], Span] = {}
    covering = (s for s in candidates if s.first_event_id <= event <= s.last_event_id)
    for span in sorted(
        covering, key=lambda s: (_rank(s.level), s.last_event_id, -s.first_event_id, s.id)
    ):
        by_level.setdefault(_rank(span.level), span)
    return list(by_level.values())


def _finer_cover(summaries: Sequence[Span], outer: Span) -> list[Span]:
    """The summaries of the next finer level that together cover exactly ``outer``'s events,
    newest first, or none when that level leaves part of them uncovered."""
    return _cover_at(summaries, outer, pick_level=max)


def _finest_cover(summaries: Sequence[Span], outer: Span) -> list[Span]:
    """The same, at the finest level there is inside ``outer``."""
    return _cover_at(summaries, outer, pick_level=min)


def _cover_at(summaries: Sequence[Span], outer: Span, *, pick_level) -> list[Span]:
    finer = [
        s
        for s in summaries
        if _rank(s.level) < _rank(outer.level) and covers(outer, s) and s != outer
    ]
    if not finer:
        return []
    level = pick_level(_rank(s.level) for s in finer)
    inside = sorted(
        (s for s in finer if _rank(s.level) == level),
        key=lambda s: (-s.last_event_id, s.first_event_id, s.id),
    )
    cover: list[Span] = []
    reached = outer.last_event_id + 1
    for span in inside:
        if span.last_event_id == reached - 1:
            cover.append(span)
            reached = span.first_event_id
    return cover if reached == outer.first_event_id else []


def _rank(level: str) -> tuple[int, str]:
    """Finest first: L0, L1, L2, then any other level by name."""
    return (LEVELS.index(level), "") if level in LEVELS else (len(LEVELS), level)
