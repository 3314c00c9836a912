"""What the Anvil's pages share (``anvil.pages``): a source event is shown one way everywhere."""

from datetime import UTC, datetime

import pytest
from django.urls import reverse

from anvil.pages import event_line, event_list
from events.models import Event
from events.selectors import source_events
from gem.models import Fragment, FragmentSource, WorkingMemory, WorkingMemorySource
from gem.services import time_zone_set
from mirror.models import Summary, TagSuggestion

pytestmark = pytest.mark.django_db(databases="__all__")


@pytest.fixture
def said():
    return Event.objects.create(content="The fairy lives in the well.", actor="luna")


def line_of(event: Event) -> str:
    """The one line a source event is shown as."""
    return event_line(event.pk, source_events([event.pk])[event.pk])


def test_it_shows_a_source_event_as_one_linked_line_or_says_it_is_missing(said):
    shown = event_list([said.pk, 404])

    url = reverse("admin:events_event_change", args=[said.pk])
    assert f'<a href="{url}">#{said.pk}</a>' in line_of(said)
    assert "luna</span> The fairy lives in the well." in line_of(said)
    assert line_of(said) in shown and "#404</a> (not in the event log)" in shown


def test_every_page_shows_a_source_event_as_the_same_line(admin_client, said):
    fairy = Fragment.objects.create(key="fairy", ambient="White softness.")
    Fragment.objects.create(key="moon", ambient="A pale moon.")
    FragmentSource.objects.create(fragment=fairy, event_id=said.pk)
    item = WorkingMemory.objects.create(type="pin", content="the well")
    WorkingMemorySource.objects.create(wm=item, event_id=said.pk)
    summary = Summary.objects.create(
        level="L0", first_event_id=said.pk, last_event_id=said.pk, content="A well."
    )
    suggestion = TagSuggestion.objects.create(summary=summary, type="pin", content="the well")
    draft = f"# moon\n\n## sources\n\n- events {said.pk}\n"

    pages = {
        "fragment": admin_client.get(reverse("admin:gem_fragment_change", args=["fairy"])),
        "item": admin_client.get(reverse("admin:gem_workingmemory_change", args=[item.pk])),
        "suggestion": admin_client.get(
            reverse("admin:mirror_tagsuggestion_change", args=[suggestion.pk])
        ),
        "draft": admin_client.post(reverse("admin:gem_fragment_draft"), {"text": draft}),
    }

    line = line_of(said)
    assert {name: line in page.content.decode() for name, page in pages.items()} == {
        name: True for name in pages
    }


def test_a_source_events_line_says_its_moment_in_the_owners_zone(admin_client):
    time_zone_set(name="Europe/Berlin")
    said = Event.objects.create(
        content="The fairy lives in the well.",
        actor="luna",
        ts=datetime(2026, 12, 6, 3, 34, tzinfo=UTC),
    )
    fairy = Fragment.objects.create(key="fairy", ambient="White softness.")
    FragmentSource.objects.create(fragment=fairy, event_id=said.pk)

    page = admin_client.get(reverse("admin:gem_fragment_change", args=["fairy"])).text

    assert "6 Dec 2026, 04:34 luna</span> The fairy lives in the well." in page
