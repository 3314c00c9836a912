"""A moment as a person reads it: in the zone in use (the owner's for every request,
``heart.zone.OwnerTimeZoneMiddleware``) and in the one format, "6 Dec 2026, 04:34"
(``silentstar.words.moment_said``; Django's own pages say it the same way through
``silentstar/formats/en/formats.py``). UTC is for exports and logs. In a template:
``{% load clock %}`` and ``{{ event.ts|when }}``."""

from datetime import datetime

from django.utils import timezone

from silentstar.words import moment_said


def when(moment: datetime | None) -> str:
    """``moment`` in the zone in use and the one format: "6 Dec 2026, 04:34"; "—" for none."""
    if moment is None:
        return "—"
    return moment_said(_local(moment))


def when_short(moment: datetime | None) -> str:
    """``when`` without the year when it is this year's, for a list's column and the chat:
    "6 Dec, 04:34", "6 Dec 2025, 04:34"."""
    if moment is None:
        return "—"
    local = _local(moment)
    return moment_said(local, year=local.year != timezone.localtime().year)


def _local(moment: datetime) -> datetime:
    # A naive moment (read from a file being imported) is already the wall-clock time it says.
    return timezone.localtime(moment) if timezone.is_aware(moment) else moment
