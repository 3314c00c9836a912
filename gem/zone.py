"""The owner's time zone: the one chosen in the set-up, else ``SILENTSTAR_TIME_ZONE``.

The choice is kept in the Gem's ``State`` under ``TIME_ZONE`` (written by
``gem.services.time_zone_set``); the Heart reads it for "Now" and the chat page's times, the
Gem for the due dates it reads in a plan's words. Every moment a person reads is said in that
zone by ``silentstar.when`` (``{{ moment|when }}`` in a template, ``{% load clock %}``).
"""

from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.conf import settings

from gem.state import state_get

TIME_ZONE = "time_zone"


def time_zone_known(name: str) -> bool:
    """Whether ``name`` is an IANA time zone this machine knows (``Europe/Amsterdam``)."""
    if not isinstance(name, str) or not name:
        return False
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return False
    return True


def owner_time_zone() -> str:
    """The name of the owner's time zone. A stored value this machine does not know (edited
    by hand in the Anvil) gives way to the setting rather than stopping every page."""
    chosen = state_get(TIME_ZONE)
    return chosen if time_zone_known(chosen) else settings.TIME_ZONE
