"""What the Loom's tests share (its own and the Anvil's pages'): a small Gem, photos, a session
holding both. Test modules take the fixtures with a star import."""

from io import BytesIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from PIL import Image

from gem.models import Fragment, FragmentEdge
from loom.services import inbox_add, session_create, session_fragment_add, session_images_take


def png_bytes(color: str = "red", size: tuple[int, int] = (8, 6)) -> bytes:
    buffer = BytesIO()
    Image.new("RGB", size, color).save(buffer, format="PNG")
    return buffer.getvalue()


def png_upload(name: str = "shelf.png", color: str = "red") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, png_bytes(color), content_type="image/png")


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def gem():
    """A lantern kept on a shelf, and a star nobody links."""
    lantern = Fragment.objects.create(
        key="lantern", ambient="Her brass lantern.", inventory="- brass, dented"
    )
    shelf = Fragment.objects.create(key="shelf", ambient="The kitchen shelf.")
    Fragment.objects.create(key="star", ambient="A star.")
    FragmentEdge.objects.create(source=lantern, target=shelf, relation="kept on")
    return lantern


@pytest.fixture
def session(gem, media):
    """An open session on the lantern holding one photo taken from the inbox."""
    session = session_create(topic="The lantern")
    session_fragment_add(session_id=session.pk, key="lantern")
    (inbox,) = inbox_add(uploads=[(png_upload(), "png")])
    session_images_take(session_id=session.pk, image_ids=[inbox.pk])
    return session


def answer(draft: str, *, notes: str = "Seen.", patterns: str = "") -> str:
    """An agent's answer in the Loom's sections."""
    text = f"=== notes ===\n{notes}\n\n=== draft ===\n{draft}\n"
    if patterns:
        text += f"\n=== patterns ===\n{patterns}\n"
    return text


INVENTORY_DRAFT = "# lantern\n\n## inventory\n\n- brass, dented\n- a blue glass pane\n"
