"""Times as other companions write them, read into aware datetimes.

SillyTavern alone has written a message's ``send_date`` four ways over its versions, and its own
reader (``timestampToMoment`` in ``public/scripts/utils.js``) still accepts them all:

- epoch milliseconds, as a number or a text of digits (its oldest chats, and Tavern AI's);
- ISO 8601, ``2024-05-16T13:45:07.123Z`` (``toISOString()``, today's chats);
- "humanized", ``2024-5-16@13h45m07s``, with or without zero padding, a trailing
  ``123ms``, or spaces (``2024-6-5 @14h 56m 50s 682ms``), the shape of ``create_date`` too;
- the older ``May 16, 2024 1:45pm``, English month, no seconds.

A time written without an offset is the wall clock of whoever wrote it: it is read in the zone
the caller gives. (SillyTavern itself reads a humanized time as UTC, but it wrote the writer's
local clock into it, so UTC would shift every message by the writer's offset.)
"""

import re
from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo

HUMANIZED = re.compile(
    r"(\d{4})-(\d{1,2})-(\d{1,2}) ?@(\d{1,2})h ?(\d{1,2})m ?(\d{1,2})s(?: ?(\d{1,3})ms)?"
)
MERIDIEM = re.compile(r"([A-Za-z]+)\.? (\d{1,2}), (\d{4}) (\d{1,2}):(\d{1,2}) ?([ap]m)", re.I)
MONTHS = {
    name: number
    for number, full in enumerate(
        (
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ),
        start=1,
    )
    for name in (full, full[:3])
}
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def zone_of(name: str) -> tzinfo:
    """The zone of an IANA name ("Europe/Paris")."""
    return ZoneInfo(name)


def moment_read(value, *, zone: tzinfo) -> datetime:
    """The aware time ``value`` says, in any shape above; a time without an offset is in ``zone``.

    Raises ``ValueError`` saying what the value is not.
    """
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"not a time ({_shown(value)})")
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    if not isinstance(value, str):
        if not 0 <= value < 253_402_300_800_000:
            raise ValueError(f"not a time ({_shown(value)} milliseconds since 1970)")
        return EPOCH + timedelta(milliseconds=value)
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        moment = _humanized(value) or _meridiem(value)
    if moment is None:
        raise ValueError(f"not a time ({_shown(value)})")
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=zone)


def _humanized(text: str) -> datetime | None:
    found = HUMANIZED.fullmatch(text.strip())
    if found is None:
        return None
    *parts, millis = found.groups()
    year, month, day, hour, minute, second = (int(part) for part in parts)
    try:
        return datetime(
            year, month, day, hour, minute, second, int((millis or "0").zfill(3)) * 1000
        )
    except ValueError:
        return None


def _meridiem(text: str) -> datetime | None:
    found = MERIDIEM.fullmatch(text.strip())
    if found is None or found[1].lower() not in MONTHS:
        return None
    hour = int(found[4]) % 12 + (12 if found[6].lower() == "pm" else 0)
    try:
        return datetime(int(found[3]), MONTHS[found[1].lower()], int(found[2]), hour, int(found[5]))
    except ValueError:
        return None


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "…"
