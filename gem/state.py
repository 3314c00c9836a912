"""Small named values kept between turns, stored as JSON in ``State`` rows."""

import json
from typing import Any

from django.db import transaction
from django.utils import timezone

from gem.models import State

TURN_COUNTER = "turn_counter"
PENDING_RECALL = "pending_recall"
CHARS_PER_TOKEN = "chars_per_token"


def state_get(key: str, default: Any = None) -> Any:
    return state_get_many({key: default})[key]


def state_get_many(defaults: dict[str, Any]) -> dict[str, Any]:
    """Several values in one query: ``{key: default}`` in, ``{key: value}`` out."""
    stored = dict(State.objects.filter(key__in=defaults).values_list("key", "value"))
    return {
        key: json.loads(stored[key]) if key in stored else default
        for key, default in defaults.items()
    }


def state_set(key: str, value: Any) -> None:
    encoded = json.dumps(value)
    # One statement when the key exists, as it does after its first turn.
    if not State.objects.filter(key=key).update(value=encoded, updated_at=timezone.now()):
        State.objects.update_or_create(key=key, defaults={"value": encoded})


def turn_counter_current() -> int:
    return state_get(TURN_COUNTER, 0)


def turn_counter_advance() -> int:
    """Add one to the turn counter (user messages only) and return the new value."""
    # FOR UPDATE serialises this on PostgreSQL; SQLite ignores it, but its IMMEDIATE
    # transactions already hold the write lock from the start.
    with transaction.atomic():
        row, _ = State.objects.select_for_update().get_or_create(
            key=TURN_COUNTER, defaults={"value": "0"}
        )
        number = json.loads(row.value) + 1
        row.value = json.dumps(number)
        row.save(update_fields=["value", "updated_at"])
    return number
