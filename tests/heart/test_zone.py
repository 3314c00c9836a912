"""Every request in the owner's time zone (``heart.zone.OwnerTimeZoneMiddleware``)."""

from datetime import UTC, datetime

import pytest
from django.urls import reverse

from gem.services import time_zone_set
from heart.ingest import event_record

pytestmark = pytest.mark.django_db(databases="__all__")


def test_it_shows_the_chat_in_the_owners_time_zone(admin_client, settings):
    settings.TIME_ZONE = "UTC"
    event_record(text="<luna>hello</luna>", actor="luna", ts=datetime(2026, 3, 2, 9, 0, tzinfo=UTC))
    assert "2 Mar, 09:00" in admin_client.get(reverse("heart-chat")).text

    time_zone_set(name="Asia/Tokyo")
    html = admin_client.get(reverse("heart-chat")).text
    assert "2 Mar, 18:00" in html and 'datetime="2026-03-02T18:00:00+09:00"' in html
