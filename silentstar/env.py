"""Typed readers for settings that come from the environment.

Every reader fails loudly, naming the variable and the value it could not use,
so a typo in a deployment stops start-up instead of silently becoming a default.
"""

import os
from urllib.parse import parse_qsl, unquote, urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.core.exceptions import ImproperlyConfigured

TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off", ""})


def _raw(name: str) -> str | None:
    value = os.environ.get(name)
    return None if value is None else value.strip()


def env_str(name: str, default: str) -> str:
    raw = _raw(name)
    return default if raw is None or raw == "" else raw


def env_bool(name: str, default: bool) -> bool:
    raw = _raw(name)
    if raw is None:
        return default
    word = raw.lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ImproperlyConfigured(
        f"{name} must be one of {sorted(TRUE_WORDS | FALSE_WORDS - {''})}, got {raw!r}"
    )


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = _raw(name)
    if raw is None or raw == "":
        value = default
    else:
        try:
            value = int(raw)
        except ValueError:
            raise ImproperlyConfigured(f"{name} must be a whole number, got {raw!r}") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {value}")
    return value


def env_float(name: str, default: float, *, minimum: float | None = None) -> float:
    raw = _raw(name)
    if raw is None or raw == "":
        value = default
    else:
        try:
            value = float(raw)
        except ValueError:
            raise ImproperlyConfigured(f"{name} must be a number, got {raw!r}") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {value}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = _raw(name)
    if raw is None or raw == "":
        return list(default)
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_time_zone(name: str, default: str) -> str:
    zone = env_str(name, default)
    try:
        ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        raise ImproperlyConfigured(
            f"{name} must be an IANA time zone such as 'Europe/London', got {zone!r}"
        ) from None
    return zone


def env_hours(name: str, default: str) -> tuple[int, int]:
    """A stretch of the day such as ``22:00-08:00`` (it may run past midnight), as the minutes
    after midnight where it starts and where it ends; ``""`` or ``off`` for none, ``(0, 0)``."""
    raw = env_str(name, default)
    if raw.lower() in ("", "off", "none"):
        return (0, 0)
    try:
        start, end = (_minute_of_day(part) for part in raw.split("-"))
    except ValueError:
        raise ImproperlyConfigured(
            f"{name} must be two times of day such as '22:00-08:00', or 'off', got {raw!r}"
        ) from None
    return (start, end)


def _minute_of_day(text: str) -> int:
    hours, _, minutes = text.strip().partition(":")
    hour, minute = int(hours), int(minutes or 0)
    if not (0 <= hour <= 23 and 0 <= minute <= 59):
        raise ValueError(text)
    return hour * 60 + minute


POSTGRES_SCHEMES = frozenset({"postgres", "postgresql"})


def database_from_url(name: str, url: str) -> dict:
    """Django DATABASES entry for a ``postgres://user:password@host:port/dbname`` URL."""
    parts = urlsplit(url)
    if parts.scheme not in POSTGRES_SCHEMES:
        raise ImproperlyConfigured(
            f"{name} must be a postgres:// URL (SQLite is the default when it is unset), "
            f"got scheme {parts.scheme!r}"
        )
    database = unquote(parts.path.lstrip("/"))
    if not database:
        raise ImproperlyConfigured(
            f"{name} must name a database after the host, e.g. .../silentstar"
        )
    try:
        port = parts.port
    except ValueError:
        raise ImproperlyConfigured(f"{name} has a port that is not a number: {url!r}") from None
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": database,
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": parts.hostname or "",
        "PORT": str(port or ""),
        "OPTIONS": dict(parse_qsl(parts.query)),
    }
