"""Reads of the Gem shared by the Heart, the Lens and the Anvil."""

import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connections, models, router

from gem import decay
from gem.models import (
    AmbientProse,
    Fragment,
    FragmentEdge,
    Identity,
    VersionedText,
    WakeText,
    WorkingMemory,
)
from gem.recall import recall_items, woken_items
from gem.recalled import Recall, RecalledItem
from gem.state import WORKING_MEMORY_FILL, state_get
from gem.waking import Named, names_found, names_index


def newest_version(model: type[VersionedText], *same_text: models.Q, **same):
    """The newest version of a text kept as versions (a ``VersionedText``: the ambient prose,
    the wake texts, the agents' prompts): of those matching ``same_text`` and ``same``, the last
    created (the higher id on a tie); None when there is none."""
    return model.objects.filter(*same_text, **same).order_by("-created_at", "-id").first()


@dataclass(frozen=True)
class Prompt:
    """An agent's instructions in use: the newest saved version, or its shipped default
    (``version_id`` None)."""

    text: str
    version_id: int | None


def agent_prompt(model: type[VersionedText], *, kind: str, defaults: Path) -> Prompt:
    """The newest saved ``model`` (an agent's versioned prompts: the Mirror's, the Compass's,
    the Loom's) of ``kind``, else the shipped default ``defaults/<kind>.md``."""
    latest = newest_version(model, kind=kind)
    if latest is not None:
        return Prompt(latest.content, latest.pk)
    return Prompt((defaults / f"{kind}.md").read_text(encoding="utf-8"), None)


def wake_text_current(kind: str) -> str:
    """The newest version of a wake text ("wake" or "image")."""
    latest = newest_version(WakeText, kind=kind)
    return latest.content if latest else ""


def ambient_prose_current() -> str:
    latest = newest_version(AmbientProse)
    return latest.content if latest else ""


@dataclass(frozen=True)
class Identities:
    """Who can speak, read in one query: the parser needs the names, the Heart the sides."""

    names: list[str]
    companions: frozenset[str]

    @property
    def default_companion(self) -> str:
        """The companion a reply without an identity tag is from: the first one listed."""
        return next((n for n in self.names if n in self.companions), "claude")

    @property
    def users(self) -> list[str]:
        """The person's identities, in order."""
        return [name for name in self.names if name not in self.companions]

    @cached_property
    def sides(self) -> dict[str, str]:
        """Every identity's side, ``user`` or ``companion``."""
        return {n: "companion" if n in self.companions else "user" for n in self.names}


def identities_current() -> Identities:
    rows = list(Identity.objects.order_by("id").values_list("name", "side"))
    return Identities(
        names=[name for name, _ in rows],
        companions=frozenset(name for name, side in rows if side == "companion"),
    )


LINGERING_FIELDS = ("id", "type", "content", "subject", "due", "turn", "refreshed_at", "hidden")


def decay_pressure(fill: float) -> float:
    """The pressure on working memory for a Lingering fill ratio, at the configured strength."""
    return decay.pressure_from_fill(fill=fill, strength=settings.DECAY_PRESSURE)


def decay_pressure_current() -> float:
    """The pressure the last turn's fill puts on working memory now (no read when it is off)."""
    if not settings.DECAY_PRESSURE:
        return 0.0
    return decay_pressure(state_get(WORKING_MEMORY_FILL, 0.0))


def working_memory_scores(
    rows: Sequence[Any], *, now: datetime, current_turn: int, pressure: float | None = None
) -> list[float]:
    """The live decay score of each active working-memory row (`GemNow.working_memory`), in
    the rows' order, under ``pressure`` (by default the current one)."""
    return decay.scores(
        [(row.type, row.refreshed_at, row.turn, row.due, row.hidden) for row in rows],
        now=now,
        current_turn=current_turn,
        pressure=decay_pressure_current() if pressure is None else pressure,
    )


def working_memory_scored(
    rows: Sequence[Any], *, now: datetime, current_turn: int
) -> list[tuple[Any, float]]:
    """Active working-memory rows (`GemNow.working_memory`) with their live decay score,
    strongest first (ties: lower id first)."""
    scores = working_memory_scores(rows, now=now, current_turn=current_turn)
    scored = list(zip(rows, scores, strict=True))
    scored.sort(key=lambda pair: (-pair[1], pair[0].id))
    return scored


@dataclass(frozen=True)
class GemNow:
    """What every turn reads of the Gem, as it is in the database now.

    ``working_memory`` holds every active item as a named tuple of ``LINGERING_FIELDS``: it
    is scored every turn, and plain rows cost a fraction of model instances.
    """

    identities: Identities
    wake_text: str
    image_text: str
    ambient_prose: str
    working_memory: list[Any]
    recalled_before: dict = field(repr=False, compare=False)  # recall results, same fragments
    names: dict = field(repr=False, compare=False)  # every fragment's names (gem.waking)

    def recalled(self, requests: Sequence[Recall]) -> list[RecalledItem]:
        """`gem.recall.recall_items`, read once for as long as fragments and edges are as they
        are: a companion often asks for the same keys turn after turn."""
        key = tuple(requests)
        if key not in self.recalled_before:
            if len(self.recalled_before) >= RECALLS_KEPT:
                self.recalled_before.clear()
            self.recalled_before[key] = recall_items(requests)
        return self.recalled_before[key]

    def woken(self, message: str) -> tuple[list[Named], list[RecalledItem]]:
        """The fragments ``message`` names by their keys and triggers, and what they bring
        (`gem.recall.woken_items`), recalled through the same kept results as a recall."""
        named = names_found(message, self.names)
        if not named:
            return [], []
        return named, woken_items(named, self.recalled([Recall(n.key, deep=False) for n in named]))


def gem_current() -> GemNow:
    """The Gem as a turn reads it, through this process's copy (`GemCopy`)."""
    return gem_copy.current()


class GemCopy:
    """What every turn reads of the Gem, kept in this process from one turn to the next.

    A turn reads every active working-memory item, the identities, the wake texts and the
    ambient prose, and recalls fragments; from one turn to the next only a few working-memory
    rows change, and the rest hardly ever. Triggers (gem migration 0007) stamp every insert,
    update or delete of those tables, whatever makes it (ingest, the decay sweep, the admin,
    raw SQL), with a new ``seq`` in ``gem_change``: a number that only grows, per
    working-memory row and per table for the others. A read asks for what changed after the
    ``seq`` it last saw (one small query) and reads again only that: the changed
    working-memory rows, a changed table whole (any change to fragments or edges forgets
    every recall result).

    The newest change always comes back, so a latest ``seq`` lower than the one seen (the
    changes rolled back, or another database) means everything is read again, as on first use.
    Tests, whose databases roll back, start each with `clear`.
    """

    RELOAD_OVER = 500  # changed rows past which reading every active row is the cheaper way

    def __init__(self) -> None:
        self._lock = threading.Lock()  # the live server's threads share the process
        self.clear()

    def clear(self) -> None:
        """Forget everything: the next read reads it all."""
        with self._lock:
            self._seq: int | None = None
            self._tables: dict[tuple[str, str], Any] = {}  # (table, part) → what was read
            self._rows: dict[int, Any] = {}  # active working memory by id

    def current(self) -> GemNow:
        with self._lock:
            self._refresh()
            return GemNow(
                identities=self._table(Identity, identities_current),
                wake_text=self._table(WakeText, lambda: wake_text_current("wake")),
                image_text=self._table(WakeText, lambda: wake_text_current("image"), "image"),
                ambient_prose=self._table(AmbientProse, ambient_prose_current),
                working_memory=list(self._rows.values()),
                recalled_before=self._table(Fragment, dict),
                names=self._table(Fragment, _names_read, "names"),
            )

    def _refresh(self) -> None:
        seen = self._seq or 0
        with connections[router.db_for_read(WorkingMemory)].cursor() as cursor:
            cursor.execute(
                f"SELECT source, row_id, seq FROM {CHANGES} "
                f"WHERE seq > %s OR seq = (SELECT max(seq) FROM {CHANGES})",
                [seen],
            )
            changes = cursor.fetchall()
        latest = max((seq for *_, seq in changes), default=0)
        fresh = [(source, row_id) for source, row_id, seq in changes if seq > seen]
        rows = {row_id for source, row_id in fresh if source == WORKING_MEMORY}
        if (
            self._seq is None
            or latest < seen
            or WHOLE_TABLE in rows
            or len(rows) > self.RELOAD_OVER
        ):
            self._tables.clear()
            self._rows = {row.id: row for row in _lingering_rows(_active())}
        else:
            for source, _ in fresh:
                if source == EDGES:  # recall reads the edges with the fragments
                    source = FRAGMENTS
                for key in [key for key in self._tables if key[0] == source]:
                    del self._tables[key]
            if rows:
                for row_id in rows:
                    self._rows.pop(row_id, None)
                self._rows.update(
                    (row.id, row) for row in _lingering_rows(_active().filter(pk__in=rows))
                )
        self._seq = latest

    def _table(self, model, read: Callable[[], Any], part: str = "") -> Any:
        """What ``read`` gives, read again once ``model``'s table changed."""
        key = (model._meta.db_table, part)
        if key not in self._tables:
            self._tables[key] = read()
        return self._tables[key]


CHANGES = "gem_change"
WORKING_MEMORY = WorkingMemory._meta.db_table
WHOLE_TABLE = 0  # the row id of a change to a table as a whole (its rows are not told apart)
FRAGMENTS, EDGES = Fragment._meta.db_table, FragmentEdge._meta.db_table
RECALLS_KEPT = 256  # recall results kept at most; all are forgotten when it is reached
gem_copy = GemCopy()


def _names_read() -> dict:
    """Every fragment's key and triggers as ``gem.waking`` finds them in a message."""
    return names_index(
        (key, [key, *triggers]) for key, triggers in Fragment.objects.values_list("key", "triggers")
    )


def _active():
    return WorkingMemory.objects.filter(status="active").order_by()  # scoring sorts


def _lingering_rows(queryset) -> Any:
    return queryset.values_list(*LINGERING_FIELDS, named=True)


def decay_inputs(item: Any, *, now: datetime, current_turn: int) -> dict:
    """The arguments `gem.decay` needs about a working-memory item (a model or a row)."""
    return {
        "type": item.type,
        "refreshed_at": item.refreshed_at,
        "now": now,
        "created_turn": item.turn,
        "current_turn": current_turn,
        "due": item.due,
    }


AMBIENT_KEY = re.compile(r"\[([\w][\w'-]*)\]")


@dataclass(frozen=True)
class AmbientCheck:
    """How the ambient prose and the fragments line up."""

    missing: list[str]  # ``[keys]`` the prose names that no fragment has, in order of mention
    unmentioned: list[str]  # fragments the prose never names, by key


def ambient_prose_check(prose: str | None = None) -> AmbientCheck:
    """Check the current ambient prose (or a draft of it) against the fragments."""
    text = ambient_prose_current() if prose is None else prose
    named = list(dict.fromkeys(AMBIENT_KEY.findall(text)))
    keys = set(Fragment.objects.values_list("key", flat=True))
    return AmbientCheck(
        missing=[key for key in named if key not in keys],
        unmentioned=sorted(keys - set(named)),
    )
