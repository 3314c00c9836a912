"""What a message post and a history request may contain (``heart.forms``)."""

import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from PIL import Image

from heart.forms import MESSAGE_MAX_CHARS, HistoryForm, MessageForm, image_max_bytes
from silentstar import claude

USER_IDENTITIES = ["hasuki", "renki", "luna", "chloe", "strah"]


def image_file(image_format="PNG", size=(4, 3), name=None, mode="RGB"):
    buffer = io.BytesIO()
    Image.new(mode, size, (200, 100, 50)).save(buffer, format=image_format)
    extension = image_format.lower()
    return SimpleUploadedFile(name or f"picture.{extension}", buffer.getvalue())


def form(data=None, image=None):
    files = {"image": image} if image is not None else {}
    return MessageForm(data or {}, files, identities=USER_IDENTITIES)


def test_it_accepts_a_message_with_an_identity():
    sent = form({"message": "hi <plan>call mum</plan>", "identity": "luna"})
    assert sent.is_valid(), sent.errors
    assert sent.cleaned_data["message"] == "hi <plan>call mum</plan>"
    assert sent.cleaned_data["identity"] == "luna"


def test_it_keeps_the_message_exactly_as_written():
    sent = form({"message": "  spaced\n"})
    assert sent.is_valid()
    assert sent.cleaned_data["message"] == "  spaced\n"


def test_it_accepts_no_identity():
    sent = form({"message": "hello", "identity": ""})
    assert sent.is_valid()
    assert sent.cleaned_data["identity"] == ""


@pytest.mark.parametrize("message", ["", "   \n "])
def test_it_needs_a_message_or_an_image(message):
    sent = form({"message": message})
    assert not sent.is_valid()
    assert sent.first_error() == "Write a message or attach an image."


def test_it_accepts_an_image_alone():
    sent = form({"message": ""}, image=image_file())
    assert sent.is_valid(), sent.errors
    assert sent.image_extension == "png"


def test_it_limits_the_length_of_a_message():
    assert form({"message": "x" * MESSAGE_MAX_CHARS}).is_valid()
    sent = form({"message": "x" * (MESSAGE_MAX_CHARS + 1)})
    assert not sent.is_valid()
    assert "too long" in sent.first_error() and "20000" in sent.first_error()


@pytest.mark.parametrize("identity", ["claude", "y'lhara", "nobody"])
def test_it_accepts_only_the_persons_identities(identity):
    sent = form({"message": "hi", "identity": identity})
    assert not sent.is_valid()
    assert sent.first_error() == f"“{identity}” is not one of your identities."


@pytest.mark.parametrize(
    ("image_format", "extension"),
    [("PNG", "png"), ("JPEG", "jpg"), ("GIF", "gif"), ("WEBP", "webp")],
)
def test_it_names_the_extension_after_the_real_format(image_format, extension):
    sent = form({"message": "look"}, image=image_file(image_format, name="misnamed.bin"))
    assert sent.is_valid(), sent.errors
    assert sent.image_extension == extension


def test_it_refuses_a_file_that_is_not_an_image():
    fake = SimpleUploadedFile("picture.png", b"just some text, not a picture")
    sent = form({"message": "look"}, image=fake)
    assert not sent.is_valid()
    assert "not an image that can be read" in sent.first_error()


def test_it_refuses_a_damaged_image():
    whole = image_file(size=(64, 64)).read()
    sent = form({"message": "look"}, image=SimpleUploadedFile("cut.png", whole[:60]))
    assert not sent.is_valid()
    assert "not an image that can be read" in sent.first_error()


def test_it_refuses_other_image_formats():
    sent = form({"message": "look"}, image=image_file("BMP"))
    assert not sent.is_valid()
    assert sent.first_error() == "Only JPEG, PNG, GIF or WebP images can be sent, not BMP."


def test_it_refuses_too_many_pixels(settings):
    settings.IMAGE_MAX_PIXELS = 100
    assert form({"message": "x"}, image=image_file(size=(10, 10))).is_valid()
    sent = form({"message": "x"}, image=image_file(size=(11, 10)))
    assert not sent.is_valid()
    assert sent.first_error() == (
        "The image is too large: 11×10 pixels; images may have at most 100 pixels."
    )


def test_it_refuses_too_many_bytes(settings):
    upload = image_file(size=(32, 32))
    settings.IMAGE_MAX_BYTES = upload.size - 1
    sent = form({"message": "x"}, image=upload)
    assert not sent.is_valid()
    assert sent.first_error() == (
        f"The image is {upload.size:,} bytes; images may be at most {upload.size - 1:,} bytes."
    )


def test_it_states_large_sizes_in_megabytes(settings):
    settings.IMAGE_MAX_BYTES = 2**20
    upload = SimpleUploadedFile("big.png", b"x" * (2**20 + 2**19))
    sent = form({"message": "x"}, image=upload)
    assert sent.first_error() == "The image is 1.50 MB; images may be at most 1.00 MB."


def test_it_never_allows_more_bytes_than_the_api_takes(settings):
    settings.IMAGE_MAX_BYTES = claude.IMAGE_MAX_BYTES * 2
    assert image_max_bytes() == claude.IMAGE_MAX_BYTES
    settings.IMAGE_MAX_BYTES = 1000
    assert image_max_bytes() == 1000


def test_it_rewinds_the_image_after_checking_it():
    upload = image_file()
    sent = form({"message": "x"}, image=upload)
    assert sent.is_valid()
    assert sent.cleaned_data["image"].tell() == 0


@pytest.mark.parametrize("before", ["abc", "0", "-3", "1.5"])
def test_it_refuses_a_bad_history_position(before):
    assert not HistoryForm({"before": before}).is_valid()


def test_it_needs_a_position_only_when_asked():
    assert not HistoryForm({}).is_valid()
    optional = HistoryForm({}, required=False)
    assert optional.is_valid() and optional.cleaned_data["before"] is None
    given = HistoryForm({"before": "41"})
    assert given.is_valid() and given.cleaned_data["before"] == 41
