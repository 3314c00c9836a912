"""A moment as a person reads it (``silentstar.when``): the zone in use, one format, and Django's
own pages saying it the same way (``silentstar/formats``)."""

from datetime import UTC, datetime, timedelta

import pytest
from django.forms import DateTimeField
from django.template import Context, Template
from django.utils import timezone
from django.utils.formats import date_format

from silentstar.when import when, when_short

pytestmark = pytest.mark.store_free

MOMENT = datetime(2026, 12, 6, 3, 34, tzinfo=UTC)


def test_it_says_a_moment_in_the_zone_in_use():
    with timezone.override("Asia/Tokyo"):
        assert when(MOMENT) == "6 Dec 2026, 12:34"
    with timezone.override("Europe/Berlin"):
        assert when(MOMENT) == "6 Dec 2026, 04:34"
    assert when(None) == "—"


def test_it_leaves_out_the_year_of_this_year_only():
    now = timezone.now()
    with timezone.override("Asia/Tokyo"):
        local = timezone.localtime(now)
        assert when_short(now) == f"{local.day} {local:%b, %H:%M}"
        assert (
            when_short(now - timedelta(days=800))
            .split(",")[0]
            .endswith(str(timezone.localtime(now - timedelta(days=800)).year))
        )
    assert when_short(None) == "—"


def test_djangos_own_pages_say_a_moment_the_same_way():
    template = Template(
        "{{ moment }}|{{ moment|date:'DATETIME_FORMAT' }}|{% load clock %}{{ moment|when }}"
    )
    with timezone.override("Europe/Berlin"):
        shown = template.render(Context({"moment": MOMENT}))
        assert shown == "|".join([when(MOMENT)] * 3)
        assert date_format(timezone.localtime(MOMENT), "DATETIME_FORMAT") == when(MOMENT)


def test_a_form_reads_a_moment_as_it_is_shown_in_the_zone_in_use():
    with timezone.override("Europe/Berlin"):
        assert DateTimeField().clean(when(MOMENT)) == MOMENT
