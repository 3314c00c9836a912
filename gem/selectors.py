"""Reads of the Gem shared by the Heart, the Lens and the Anvil."""

import re
import threading
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Any

from django.conf import settings
from django.db import connections, router

from gem import decay
from gem.models import AmbientProse, Fragment, Identity, WakeText, WorkingMemory


def wake_text_current(kind: str) -> str:
    """The newest version of a wake text ("wake" or "image")."""
    latest = WakeText.objects.filter(kind=kind).order_by("-created_at", "-id").first()
    return latest.content if latest else ""


def ambient_prose_current() -> str:
    latest = AmbientProse.objects.order_by("-created_at", "-id").first()
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


LINGERING_FIELDS = ("id", "type", "content", "subject", "due", "turn", "refreshed_at")


def working_memory_scored(*, now: datetime, current_turn: int) -> list[tuple[Any, float]]:
    """Active working memory with its live decay score, strongest first.

    Rows are named tuples of ``LINGERING_FIELDS``: this runs every turn over every active
    item, and plain rows cost a fraction of model instances. They come from the process's
    copy of the active rows, brought up to date first (`ActiveWorkingMemory`).
    """
    rows = active_working_memory.rows()
    scores = decay.scores(
        [(row.type, row.refreshed_at, row.turn, row.due) for row in rows],
        now=now,
        current_turn=current_turn,
        pressure=settings.DECAY_PRESSURE,
    )
    scored = list(zip(rows, scores, strict=True))
    scored.sort(key=lambda pair: (-pair[1], pair[0].id))
    return scored


class ActiveWorkingMemory:
    """The active working-memory rows, kept in this process between turns.

    Every turn reads all active working memory, and from one turn to the next only a few rows
    change. Triggers (gem migration 0007) give each row that is inserted, updated or deleted,
    by anything, a new ``seq`` in ``gem_workingmemory_change``, a number that only grows. A
    read asks for the ids changed since the last ``seq`` it saw (one small query) and reads
    those rows again; the rest are kept. A latest ``seq`` lower than the one seen means the
    changes were emptied or rolled back: then every active row is read again, as on first use.
    """

    RELOAD_OVER = 500  # changed ids past which reading every active row is the cheaper way

    def __init__(self) -> None:
        self._lock = threading.Lock()  # the live server's threads share the process
        self._seq: int | None = None
        self._rows: dict[int, Any] = {}

    def rows(self) -> list[Any]:
        """Every active row as it is in the database now."""
        with self._lock:
            seen = self._seq or 0
            with connections[router.db_for_read(WorkingMemory)].cursor() as cursor:
                # The newest change always comes back, so a rollback below ``seen`` shows.
                cursor.execute(
                    f"SELECT wm_id, seq FROM {CHANGES} "
                    f"WHERE seq > %s OR seq = (SELECT max(seq) FROM {CHANGES})",
                    [seen],
                )
                changes = cursor.fetchall()
            latest = max((seq for _, seq in changes), default=0)
            changed = [wm_id for wm_id, seq in changes if seq > seen]
            active = WorkingMemory.objects.filter(status="active")
            if self._seq is None or latest < seen or len(changed) > self.RELOAD_OVER:
                self._rows = {row.id: row for row in _lingering_rows(active)}
            elif changed:
                for wm_id in changed:
                    self._rows.pop(wm_id, None)
                self._rows.update(
                    (row.id, row) for row in _lingering_rows(active.filter(pk__in=changed))
                )
            self._seq = latest
            return list(self._rows.values())

    def clear(self) -> None:
        """Forget every row: the next read reads them all (tests between databases)."""
        with self._lock:
            self._seq, self._rows = None, {}


CHANGES = "gem_workingmemory_change"
active_working_memory = ActiveWorkingMemory()


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
