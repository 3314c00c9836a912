"""Small named values kept between turns, stored as JSON in ``State`` rows."""

import json
from typing import Any

from django.conf import settings
from django.db import connections, router
from django.utils import timezone

from gem.models import State
from silentstar.tokens import DEFAULT_CHARS_PER_TOKEN

TURN_COUNTER = "turn_counter"
PENDING_RECALL = "pending_recall"
CHARS_PER_TOKEN = "chars_per_token"  # Claude's; a local model's is kept under its own name
# The share of the Lingering budget the last turn's working memory took (the decay pressure).
WORKING_MEMORY_FILL = "working_memory_fill"
# Where the last turn's Recent window started and whether it was full: the Mirror fires before
# its oldest turns pass the newest summary (``{"first_event": id or None, "full": bool}``).
RECENT_WINDOW = "recent_window"
# The last turn whose prompt cache was kept warm, how many times, and when last
# (``{"turn": id, "times": n, "at": ISO moment}``).
CACHE_WARMED = "cache_warmed"
# What the last archive run said of working memory's size, shown in the Anvil ("" when fine).
ARCHIVE_WARNING = "archive_warning"


def state_get(key: str, default: Any = None) -> Any:
    return state_get_many({key: default})[key]


def chars_per_token() -> float:
    """The characters a token stands for, as calibrated from the API's usage; four until then."""
    return state_get(chars_per_token_key(), DEFAULT_CHARS_PER_TOKEN)


def chars_per_token_key() -> str:
    """Where the calibration of the model the Heart calls is kept: Claude's models share one,
    each local model (``settings.LOCAL_SERVER``) has its own, so a local tokenizer's counts never
    resize Claude's budgets."""
    if settings.LOCAL_SERVER:
        return f"{CHARS_PER_TOKEN}:{settings.HEART_MODEL}"
    return CHARS_PER_TOKEN


def state_get_many(defaults: dict[str, Any]) -> dict[str, Any]:
    """Several values in one query: ``{key: default}`` in, ``{key: value}`` out."""
    keys = list(defaults)
    stored = {}
    if keys:  # plain SQL: every turn reads and writes these, and they are two text columns
        with _connection().cursor() as cursor:
            cursor.execute(
                f'SELECT "key", "value" FROM {TABLE} '
                f'WHERE "key" IN ({", ".join(["%s"] * len(keys))})',
                keys,
            )
            stored = dict(cursor.fetchall())
    return {
        key: json.loads(stored[key]) if key in stored else default
        for key, default in defaults.items()
    }


def state_set(key: str, value: Any) -> None:
    encoded = json.dumps(value)
    connection = _connection()
    # One statement when the key exists, as it does after its first turn.
    with connection.cursor() as cursor:
        cursor.execute(
            f'UPDATE {TABLE} SET "value" = %s, "updated_at" = %s WHERE "key" = %s',
            [encoded, connection.ops.adapt_datetimefield_value(timezone.now()), key],
        )
        updated = cursor.rowcount
    if not updated:
        State.objects.update_or_create(key=key, defaults={"value": encoded})


def _connection():
    return connections[router.db_for_write(State)]


TABLE = State._meta.db_table


def turn_counter_current() -> int:
    return state_get(TURN_COUNTER, 0)


def turn_counter_advance() -> int:
    """Add one to the turn counter (user messages only) and return the new value."""
    number = _turn_counter_increment()
    if number is None:  # the first turn ever: the counter starts at 0
        State.objects.get_or_create(key=TURN_COUNTER, defaults={"value": "0"})
        number = _turn_counter_increment()
    return number


def _turn_counter_increment() -> int | None:
    """One statement reads, adds and writes, so two turns never get the same number: the
    row stays locked from the read to the write (SQLite: one writer at a time). None when
    the counter does not exist yet."""
    connection = _connection()
    with connection.cursor() as cursor:
        cursor.execute(
            f'UPDATE {TABLE} SET "value" = CAST(CAST("value" AS bigint) + 1 AS text), '
            '"updated_at" = %s WHERE "key" = %s RETURNING "value"',
            [connection.ops.adapt_datetimefield_value(timezone.now()), TURN_COUNTER],
        )
        row = cursor.fetchone()
    return None if row is None else json.loads(row[0])
