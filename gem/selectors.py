"""Reads of the Gem shared by the Heart, the Lens and the Anvil."""

import re
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Any

from django.conf import settings

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
    item, and plain rows cost a fraction of model instances.
    """
    rows = WorkingMemory.objects.filter(status="active").values_list(*LINGERING_FIELDS, named=True)
    pressure = settings.DECAY_PRESSURE
    scored = [
        (
            row,
            decay.score(**decay_inputs(row, now=now, current_turn=current_turn), pressure=pressure),
        )
        for row in rows
    ]
    scored.sort(key=lambda pair: (-pair[1], pair[0].id))
    return scored


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
