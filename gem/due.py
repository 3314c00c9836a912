"""Due dates for plans, read from the plan's own words when it is written.

What a phrase means (relative to the message's time, in the owner's time zone):
- "friday at 5pm" → the coming Friday at 17:00; "in 3 days" → three days on, same time;
  "tomorrow morning" → tomorrow 09:00.
- "tuesday", "this tuesday" and "next tuesday" all mean the coming Tuesday — the first one
  after today (on a Tuesday, "next tuesday" is a week on). A weekday or a date without a time
  is due at the start of that day, so the plan has fully resurfaced when the day begins and is
  in its grace period through the day.
- A phrase only counts if it has a digit or a clear time word (a weekday's full name, today,
  tonight, tomorrow, week, weekend, month, morning, afternoon, evening, noon, midnight): words
  like "may" or "sun" on their own are not dates.
- A plan is never due before it is written. A time of day already past is its next
  occurrence: "at 9am" written at 10:00 is due tomorrow at 09:00. A phrase that names today
  or an earlier day and has passed ("tonight" at 21:00 — dateparser's tonight is 20:00 —,
  "this morning" written in the evening, a date gone by) is due at once, when written: still
  today, not tomorrow.
"""

import re
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

TIME_WORDS = re.compile(
    r"\d|\b(monday|tuesday|wednesday|thursday|friday|saturday|sunday|today|tonight|tomorrow"
    r"|week|weekend|month|morning|afternoon|evening|noon|midnight)\b",
    re.IGNORECASE,
)
WEEKDAY = re.compile(r"\b(monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b", re.I)
CLOCK_TIME = re.compile(r"\d|noon|midnight|morning|afternoon|evening", re.IGNORECASE)
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]


def due_from_text(text: str, *, written_at: datetime, time_zone: str) -> datetime | None:
    """The due moment a plan's text names, or None for an open-ended plan."""
    from dateparser.search import search_dates  # costs a quarter second: only when needed

    zone = ZoneInfo(time_zone)
    local = written_at.astimezone(zone)
    # Everything in the owner's wall-clock time, "UTC" standing for "no shift": with the
    # owner's zone as TIMEZONE, dateparser compares a bare time of day with RELATIVE_BASE as if
    # the base were UTC, and "at 9am" at 10:00 in New York stays at today's 09:00. A result with
    # a zone of its own ("5pm EST") comes back aware.
    found = search_dates(
        text,
        languages=["en"],
        settings={
            "PREFER_DATES_FROM": "future",
            "RELATIVE_BASE": local.replace(tzinfo=None),
            "TIMEZONE": "UTC",
        },
    )
    for phrase, moment in found or ():
        if not TIME_WORDS.search(phrase):
            continue
        weekday = WEEKDAY.search(phrase)
        if weekday and not CLOCK_TIME.search(phrase):
            return _coming_weekday(local, WEEKDAYS.index(weekday.group(1).lower()))
        due = moment.replace(tzinfo=zone) if moment.tzinfo is None else moment.astimezone(zone)
        return max(due, local)
    return None


def _coming_weekday(local: datetime, weekday: int) -> datetime:
    days_ahead = (weekday - local.weekday()) % 7 or 7
    start_of_day = local.replace(hour=0, minute=0, second=0, microsecond=0)
    return start_of_day + timedelta(days=days_ahead)
