"""Uploaded files are never kept past their limit (``silentstar.uploads``)."""

import io
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.files.uploadhandler import MemoryFileUploadHandler, TemporaryFileUploadHandler
from django.urls import reverse
from PIL import Image

from events.models import Event
from silentstar.uploads import megabytes, upload_max_bytes

pytestmark = pytest.mark.django_db(databases="__all__")


def count_kept_bytes(monkeypatch) -> list[int]:
    """The sizes of the chunks Django's own handlers are given to keep, in memory or on disk."""
    kept: list[int] = []
    for handler in (MemoryFileUploadHandler, TemporaryFileUploadHandler):
        receive = handler.receive_data_chunk

        def counted(self, raw_data, start, receive=receive):
            if getattr(self, "activated", True):  # an idle memory handler passes chunks on
                kept.append(len(raw_data))
            return receive(self, raw_data, start)

        monkeypatch.setattr(handler, "receive_data_chunk", counted)
    return kept


@pytest.fixture
def kept_bytes(monkeypatch) -> list[int]:
    return count_kept_bytes(monkeypatch)


@pytest.fixture
def image_limit(settings, tmp_path) -> int:
    """A 1 MB image limit, as start-up would set it from SILENTSTAR_IMAGE_MAX_BYTES."""
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.COMPANION_OFFLINE = True
    settings.IMAGE_MAX_BYTES = 2**20
    settings.UPLOAD_MAX_BYTES = {**settings.UPLOAD_MAX_BYTES, "image": 2**20}
    return 2**20


def png_bytes(size: int) -> bytes:
    """A real PNG of about ``size`` bytes, stored uncompressed."""
    side = int((size / 3) ** 0.5)
    pixels = (bytes(range(256)) * (side * side * 3 // 256 + 1))[: side * side * 3]
    buffer = io.BytesIO()
    Image.frombytes("RGB", (side, side), pixels).save(buffer, format="PNG", compress_level=0)
    return buffer.getvalue()


def send(client, image: bytes):
    upload = SimpleUploadedFile("picture.png", image, "image/png")
    return client.post(
        reverse("heart-message-send"),
        {"message": "look", "identity": "luna", "image": upload},
        headers={"HX-Request": "true"},
    )


def test_it_refuses_an_image_over_its_limit_keeping_no_more_than_the_limit(
    admin_client, image_limit, kept_bytes, settings
):
    image = png_bytes(5 * 2**20)
    response = send(admin_client, image)
    assert response.status_code == 400
    assert f"The image is {megabytes(len(image))}; images may be at most 1.00 MB." in response.text
    assert sum(kept_bytes) <= image_limit
    assert not Event.objects.exists()
    assert not [path for path in Path(settings.MEDIA_ROOT).rglob("*") if path.is_file()]


def test_it_keeps_an_image_within_its_limit_whole(admin_client, image_limit, kept_bytes):
    image = png_bytes(image_limit - 4096)
    assert len(image) <= image_limit
    assert send(admin_client, image).status_code == 201
    assert sum(kept_bytes) == len(image)
    with Event.objects.get().image.open("rb") as stored:
        assert stored.read() == image


def test_it_gives_a_field_it_does_not_know_the_smallest_limit(settings):
    settings.UPLOAD_MAX_BYTES = {"image": 300, "upload": 200}
    assert upload_max_bytes("image") == 300
    assert upload_max_bytes("upload") == 200
    assert upload_max_bytes("attachment") == 200


def test_it_limits_each_upload_to_what_its_form_accepts(settings):
    assert settings.UPLOAD_MAX_BYTES == {
        "image": settings.IMAGE_MAX_BYTES,
        "upload": settings.DRAFT_MAX_BYTES,
        "file": settings.IMPORT_MAX_BYTES,
    }
    assert settings.FILE_UPLOAD_HANDLERS[0] == "silentstar.uploads.LimitedUploadHandler"
    assert settings.DATA_UPLOAD_MAX_MEMORY_SIZE > settings.DRAFT_MAX_BYTES


def test_it_states_sizes_in_bytes_then_megabytes():
    assert megabytes(1000) == "1,000 bytes"
    assert megabytes(3 * 2**19) == "1.50 MB"
