"""Forms of the chat page (what a message post, a correction and a history request may contain)
and of the set-up (who talks here, the companion's name, and the time zone)."""

import base64
from urllib.parse import urlsplit
from zoneinfo import available_timezones

from django import forms
from django.conf import settings
from PIL import Image

from silentstar import claude
from silentstar.forms import FirstError
from silentstar.uploads import megabytes

MESSAGE_MAX_CHARS = 20_000
IMAGE_FORMATS = {"JPEG": "jpg", "PNG": "png", "GIF": "gif", "WEBP": "webp"}  # Pillow name → ext
IMAGE_KINDS = "JPEG, PNG, GIF or WebP"


def image_max_bytes() -> int:
    """The upload limit: the setting, never above what the API accepts."""
    return min(settings.IMAGE_MAX_BYTES, claude.IMAGE_MAX_BYTES)


class MessageForm(FirstError):
    """A message from the composer: tagged text without the identity, who speaks, an image.

    ``identities`` are the names of the person's identities; ``identity`` must be one of them
    or empty. After validation ``image_extension`` holds the file extension that matches the
    image's real format (not its name).
    """

    refused = "The message could not be sent."

    message = forms.CharField(
        required=False,
        strip=False,
        max_length=MESSAGE_MAX_CHARS,
        error_messages={
            "max_length": "The message is too long: at most %(limit_value)s characters "
            "(it has %(show_value)s)."
        },
    )
    identity = forms.ChoiceField(required=False)
    image = forms.FileField(required=False)

    def __init__(self, *args, identities: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["identity"].choices = [("", "nobody in particular")] + [
            (name, name) for name in identities
        ]
        self.fields["identity"].error_messages["invalid_choice"] = (
            "“%(value)s” is not one of your identities."
        )
        self.image_extension = ""

    def clean_message(self):
        # A browser posts a form's line breaks as CRLF; the log keeps "\n" whatever sent it.
        return self.cleaned_data["message"].replace("\r\n", "\n").replace("\r", "\n")

    def clean_image(self):
        upload = self.cleaned_data.get("image")
        if not upload:
            return None
        limit = image_max_bytes()
        if upload.size > limit:
            raise forms.ValidationError(
                f"The image is {megabytes(upload.size)}; images may be at most {megabytes(limit)}.",
                code="too_large",
            )
        max_pixels = settings.IMAGE_MAX_PIXELS
        try:
            upload.seek(0)
            with Image.open(upload) as image:
                image_format = image.format
                width, height = image.size
                if image_format not in IMAGE_FORMATS:
                    raise forms.ValidationError(
                        f"Only {IMAGE_KINDS} images can be sent, not {image_format or 'this'}.",
                        code="format",
                    )
                if width * height > max_pixels:
                    raise _too_many_pixels(f"{width}×{height} pixels", max_pixels)
                image.verify()
        except Image.DecompressionBombError:
            raise _too_many_pixels("far too many pixels", max_pixels) from None
        except forms.ValidationError:
            raise
        except Exception:  # Pillow raises many kinds of error on a damaged file
            raise forms.ValidationError(
                f"That file is not an image that can be read; send a {IMAGE_KINDS} image.",
                code="unreadable",
            ) from None
        finally:
            upload.seek(0)
        self.image_extension = IMAGE_FORMATS[image_format]
        return upload

    def clean(self):
        cleaned = super().clean()
        empty = not (cleaned.get("message") or "").strip() and not cleaned.get("image")
        if empty and not self.errors:
            raise forms.ValidationError("Write a message or attach an image.", code="empty")
        return cleaned


class CorrectionForm(FirstError):
    """A correction from the chat: its kind, an edit's text (as the person sees it: without
    the identity tag), a re-attribution's identity. The rest is checked where corrections are
    made (``heart.corrections``)."""

    refused = "The correction could not be made."

    kind = forms.ChoiceField(
        choices=[(kind, kind) for kind in ("edit", "attribution", "retraction", "restoration")],
        error_messages={
            "invalid_choice": "“%(value)s” is no correction.",
            "required": "Say which correction: edit, attribution, retraction or restoration.",
        },
    )
    text = forms.CharField(required=False, strip=False)
    actor = forms.CharField(required=False, max_length=64)

    def clean_text(self):
        return self.cleaned_data["text"].replace("\r\n", "\n").replace("\r", "\n")


class HistoryForm(forms.Form):
    """Which page of the log: the events before ``before`` (an event id); for the worker's
    dot, what was written after ``after`` (the newest event the page shows)."""

    before = forms.IntegerField(min_value=1)
    after = forms.IntegerField(min_value=0, required=False)

    def __init__(self, *args, required: bool = True, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["before"].required = required


def _too_many_pixels(found: str, max_pixels: int) -> forms.ValidationError:
    return forms.ValidationError(
        f"The image is too large: {found}; images may have at most {max_pixels:,} pixels.",
        code="too_many_pixels",
    )


# --- The set-up ---------------------------------------------------------------------------

NEW_IDENTITY_COLOR = "#c4a882"
NEW_COMPANION_COLOR = "#8b8ec8"
# What a new installation's set-up starts with: a row for the person, one for the companion.
FIRST_ROWS = [
    {"side": "user", "color": NEW_IDENTITY_COLOR},
    {"side": "companion", "color": NEW_COMPANION_COLOR},
]
NAME_PLACEHOLDERS = {"user": "your name", "companion": "the companion's name"}


class IdentityForm(forms.Form):
    """One row of the set-up: an identity kept (``id``), renamed, recoloured, or a new one.

    The rules a name and a colour obey are the Gem's (``gem.services.identities_set``); this
    only reads the row.
    """

    id = forms.IntegerField(required=False, widget=forms.HiddenInput)
    name = forms.CharField(required=False, max_length=40, strip=True)
    side = forms.ChoiceField(
        choices=[("user", "you"), ("companion", "the companion")], initial="user"
    )
    color = forms.CharField(
        max_length=7, initial=NEW_IDENTITY_COLOR, widget=forms.TextInput(attrs={"type": "color"})
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not self.initial.get("name") and self.initial.get("side") in NAME_PLACEHOLDERS:
            placeholder = NAME_PLACEHOLDERS[self.initial["side"]]
            self.fields["name"].widget.attrs["placeholder"] = placeholder


IdentityFormSet = forms.formset_factory(IdentityForm, extra=1, can_delete=True, max_num=40)


def time_zone_choices() -> list:
    """The IANA time zones by region (``Europe`` → ``Europe/Amsterdam`` …), UTC on its own."""
    regions: dict[str, list[tuple[str, str]]] = {}
    for name in sorted(available_timezones()):
        region, _, place = name.partition("/")
        if place and region not in ("Etc", "SystemV"):
            regions.setdefault(region, []).append((name, place.replace("_", " ")))
    return [("UTC", "UTC"), *regions.items()]


class TimeZoneForm(forms.Form):
    time_zone = forms.ChoiceField(
        choices=time_zone_choices,
        error_messages={"invalid_choice": "“%(value)s” is not a time zone this machine knows."},
    )


def _base64url_bytes(text: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except ValueError:
        return b""


class PushSubscriptionForm(forms.Form):
    """A device's push subscription, as its browser's ``PushSubscription.toJSON()`` gives it,
    and the person's choice of words. A push service's address is HTTPS."""

    endpoint = forms.URLField(max_length=2000, assume_scheme="https")
    p256dh = forms.CharField(max_length=100)
    auth = forms.CharField(max_length=50)
    show_words = forms.BooleanField(required=False)

    def clean_endpoint(self):
        endpoint = self.cleaned_data["endpoint"]
        if not endpoint.startswith("https://"):
            raise forms.ValidationError("A push service's address begins with https://.")
        host = (urlsplit(endpoint).hostname or "").casefold()
        if not any(host == known or host.endswith(f".{known}") for known in settings.PUSH_SERVICES):
            raise forms.ValidationError(
                f"“{host}” is not a browser's push service this installation sends to "
                "(SILENTSTAR_PUSH_SERVICES)."
            )
        return endpoint

    def clean_p256dh(self):
        key = _base64url_bytes(self.cleaned_data["p256dh"])
        if len(key) != 65 or key[0] != 4:  # an uncompressed point of P-256
            raise forms.ValidationError("This is not a device's public key for push.")
        return self.cleaned_data["p256dh"]

    def clean_auth(self):
        if len(_base64url_bytes(self.cleaned_data["auth"])) != 16:
            raise forms.ValidationError("This is not a device's auth secret for push.")
        return self.cleaned_data["auth"]


class PushDeviceForm(forms.Form):
    """Which device to remove from the notifications page's list."""

    device = forms.IntegerField(min_value=1)
