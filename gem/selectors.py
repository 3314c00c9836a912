"""Reads of the Gem shared by the Heart, the Lens and the Anvil."""

from datetime import datetime
from typing import Any

from django.conf import settings

from gem import decay
from gem.models import AmbientProse, Identity, WakeText, WorkingMemory


def wake_text_current(kind: str) -> str:
    """The newest version of a wake text ("wake" or "image")."""
    latest = WakeText.objects.filter(kind=kind).order_by("-created_at", "-id").first()
    return latest.content if latest else ""


def ambient_prose_current() -> str:
    latest = AmbientProse.objects.order_by("-created_at", "-id").first()
    return latest.content if latest else ""


def companion_default_name() -> str:
    first = Identity.objects.filter(side="companion").order_by("id").first()
    return first.name if first else "claude"


def companion_names() -> set[str]:
    return set(Identity.objects.filter(side="companion").values_list("name", flat=True))


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
            decay.score(
                type=row.type,
                refreshed_at=row.refreshed_at,
                now=now,
                created_turn=row.turn,
                current_turn=current_turn,
                due=row.due,
                pressure=pressure,
            ),
        )
        for row in rows
    ]
    scored.sort(key=lambda pair: (-pair[1], pair[0].id))
    return scored
