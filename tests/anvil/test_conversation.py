import re

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.urls import reverse

from events.models import Event
from heart.corrections import correction_make
from tests.loom.fixtures import png_bytes

pytestmark = pytest.mark.django_db(databases="__all__")


def test_it_links_an_events_image_to_the_view_that_serves_it(admin_client, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    name = default_storage.save("images/2027/03/lamp.png", ContentFile(png_bytes()))
    event = Event.objects.create(content="look", actor="luna", image=name)

    page = admin_client.get(reverse("admin:events_event_change", args=[event.pk])).text

    links = re.findall(rf'<a href="([^"]+)">{re.escape(name)}</a>', page)
    assert links == [reverse("heart-image", args=[event.pk])]
    assert f"/{settings.MEDIA_URL}" not in page
    served = admin_client.get(links[0])
    assert served.status_code == 200
    assert b"".join(served.streaming_content) == png_bytes()


def test_an_events_page_shows_it_as_written_its_corrections_and_where_to_correct_it(
    admin_client,
):
    event = Event.objects.create(content="<luna>helo</luna>", actor="luna")
    url = reverse("admin:events_event_change", args=[event.pk])
    assert f'As written. <a href="/#event-{event.pk}">Correct it in the chat</a>' in (
        admin_client.get(url).text
    )
    correction_make(event_id=event.pk, kind="edit", text="<luna>hello</luna>", made_by="admin")
    correction_make(event_id=event.pk, kind="attribution", actor="renki", made_by="admin")

    page = admin_client.get(url).text

    assert "Edited, given to another identity: renki — “&lt;luna&gt;hello&lt;/luna&gt;”" in page
    assert "Corrections, oldest first" in page and page.count('<td class="field-kind">') == 2
    assert "&lt;luna&gt;helo&lt;/luna&gt;" in page  # the event as written stays


def test_an_events_page_shows_no_words_for_it_once_taken_back(admin_client):
    event = Event.objects.create(content="<luna>the code is 4471</luna>", actor="luna")
    correction_make(event_id=event.pk, kind="retraction", made_by="admin")

    page = admin_client.get(reverse("admin:events_event_change", args=[event.pk])).text

    assert f'Taken back: luna. <a href="/#event-{event.pk}">Correct it in the chat</a>' in page
