"""Which working memory leaves for the archive: seed 003's pruning phases, adapted.

Pure: no Django. ``prune_plan`` is given every working-memory item (active ones count towards
the size but never leave) and the limits, and says which items go:

- always: items no longer active whose ``idle_since`` is ``after_days`` old;
- soft (the store at ``soft`` of capacity): also those idle ``RECENT_DAYS`` and of importance
  under ``SOFT_IMPORTANCE`` that are not secrets. The seed also keeps items "referenced by any
  entry < 30 days old"; here the only link between items is a near-duplicate flag, made only
  against an active item, so an item idle that long is never the twin of a recent one;
- hard (``hard``): also the rest that are not secrets, superseded and dropped first, then the
  least important, then the longest idle, until the size is under ``hard_target``;
- emergency (``emergency``): also every item idle ``RECENT_DAYS`` that is not a secret. The seed
  blocks new writes here; a person's message is never refused, so the caller warns instead.

A secret is seed 003's ``permanent``: it never decays, so only the age rule moves it.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import IntEnum

RECENT_DAYS = 30  # the seed's "recent" (references, old drafts, the emergency)
SOFT_IMPORTANCE = 0.4
ACTIVE = "active"
PERMANENT_TYPE = "secret"
# Replaced or given up: the nearest thing here to the seed's ``archive_ready``.
LEAVING_FIRST = frozenset({"superseded", "dropped"})


class Phase(IntEnum):
    NONE = 0
    SOFT = 1
    HARD = 2
    EMERGENCY = 3


@dataclass(frozen=True)
class Limits:
    after_days: int
    capacity: int  # bytes
    soft: float  # fractions of capacity
    hard: float
    emergency: float
    hard_target: float


@dataclass(frozen=True)
class Candidate:
    id: int
    status: str
    type: str
    importance: float
    idle_since: datetime  # when it left active memory (or was last refreshed)
    size: int  # bytes of its archive line


@dataclass(frozen=True)
class Plan:
    phase: Phase  # measured before anything moves
    size: int
    ids: tuple[int, ...]
    size_after: int


def phase_of(size: int, limits: Limits) -> Phase:
    fill = size / limits.capacity
    if fill >= limits.emergency:
        return Phase.EMERGENCY
    if fill >= limits.hard:
        return Phase.HARD
    if fill >= limits.soft:
        return Phase.SOFT
    return Phase.NONE


def prune_plan(items: Iterable[Candidate], *, now: datetime, limits: Limits) -> Plan:
    items = list(items)
    size = sum(item.size for item in items)
    phase = phase_of(size, limits)
    aged = now - timedelta(days=limits.after_days)
    recent = now - timedelta(days=RECENT_DAYS)
    leaving = [item for item in items if item.status != ACTIVE]
    prunable = [item for item in leaving if item.type != PERMANENT_TYPE]

    chosen = {item.id for item in leaving if item.idle_since <= aged}
    if phase >= Phase.SOFT:
        chosen |= {
            item.id
            for item in prunable
            if item.idle_since <= recent and item.importance < SOFT_IMPORTANCE
        }
    if phase >= Phase.EMERGENCY:
        chosen |= {item.id for item in prunable if item.idle_since <= recent}
    size_after = size - sum(item.size for item in items if item.id in chosen)
    if phase >= Phase.HARD:
        target = limits.hard_target * limits.capacity
        order = sorted(
            (item for item in prunable if item.id not in chosen),
            key=lambda item: (
                item.status not in LEAVING_FIRST,
                item.importance,
                item.idle_since,
                item.id,
            ),
        )
        for item in order:
            if size_after < target:
                break
            chosen.add(item.id)
            size_after -= item.size
    return Plan(phase=phase, size=size, ids=tuple(sorted(chosen)), size_after=size_after)
