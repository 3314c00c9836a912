import re

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.urls import reverse

from events.models import Event
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
