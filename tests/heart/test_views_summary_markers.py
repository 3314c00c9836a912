"""Mirror summaries as collapsed markers in the chat history (a setting, off by default)."""

import re

import pytest
from django.urls import reverse

from events.models import Event
from mirror.models import Summary

pytestmark = pytest.mark.django_db(databases="__all__")
HTMX = {"HX-Request": "true"}
ITEM_RE = re.compile(
    r'<(?:article class="message [^"]*" id="(event-\d+)"'
    r'|details class="summary-marker" id="(summary-\d+)")'
)


def items(html: str) -> list[str]:
    return [a or b for a, b in ITEM_RE.findall(html)]


@pytest.fixture
def summarised():
    events = [Event.objects.create(content=f"<say>line {n}</say>", actor="luna") for n in range(6)]
    first = Summary.objects.create(
        level="L0", first_event_id=events[0].pk, last_event_id=events[2].pk, content="one\ntwo"
    )
    second = Summary.objects.create(
        level="L0", first_event_id=events[3].pk, last_event_id=events[4].pk, content="three"
    )
    replaced = Summary.objects.create(
        level="L0", first_event_id=events[3].pk, last_event_id=events[4].pk, content="old"
    )
    Summary.objects.filter(pk=replaced.pk).update(superseded_by=second)
    Summary.objects.create(
        level="L1", first_event_id=events[0].pk, last_event_id=events[4].pk, content="merged"
    )
    return events, first, second


def test_it_shows_no_markers_by_default(admin_client, summarised):
    html = admin_client.get(reverse("heart-chat")).text
    assert "summary-marker" not in html


def test_it_shows_current_l0_summaries_collapsed_after_the_turns_they_cover(
    admin_client, settings, summarised
):
    settings.MIRROR_HISTORY_MARKERS = True
    events, first, second = summarised
    html = admin_client.get(reverse("heart-chat")).text
    e = [f"event-{event.pk}" for event in events]
    assert items(html) == [*e[:3], f"summary-{first.pk}", *e[3:5], f"summary-{second.pk}", e[5]]
    assert (
        f"<summary>L0 summary of events {events[0].pk}–{events[2].pk}</summary><p>one<br>two</p>"
    ) in html
    partial = admin_client.get(reverse("heart-history"), {"before": events[5].pk}, headers=HTMX)
    assert items(partial.text) == items(html)[:-1]
