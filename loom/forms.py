"""Forms of the Loom's pages: a session's topic, a fragment added to it, a call of an agent,
photos taken from the inbox, and photos uploaded to it (checked as the chat checks an image)."""

from django import forms
from django.conf import settings

from heart.forms import MessageForm
from loom.models import Agent
from loom.services import QUESTION_MAX_CHARS
from silentstar.words import counted


class SessionForm(forms.Form):
    topic = forms.CharField(
        max_length=200, help_text="What the session works on: “the attic boxes”, “Grandma’s ring”."
    )


class FragmentAddForm(forms.Form):
    key = forms.CharField(max_length=100, label="Fragment key")


class CallForm(forms.Form):
    """A call from a session (``keys``: its fragments, ``images``: its photo ids) or, without
    a session (``keys`` None), on the one fragment the page is about."""

    agent = forms.ChoiceField(choices=Agent.choices, widget=forms.RadioSelect, initial="cataloguer")
    fragment_key = forms.ChoiceField(label="Fragment")
    question = forms.CharField(
        required=False,
        max_length=QUESTION_MAX_CHARS,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="What the agent should look at or answer (it may be left empty).",
    )
    images = forms.MultipleChoiceField(
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Photos for the Cataloguer",
        help_text="Only the Cataloguer is sent photos.",
    )

    def __init__(self, *args, keys: list[str] | None, images: list[tuple[int, str]] = (), **kwargs):
        super().__init__(*args, **kwargs)
        if keys is None:
            del self.fields["fragment_key"]
        else:
            self.fields["fragment_key"].choices = [(key, key) for key in keys]
        self.fields["images"].choices = [(str(pk), label) for pk, label in images]
        if not images:
            del self.fields["images"]

    def image_ids(self) -> list[int]:
        """The photos sent: the Cataloguer's only."""
        if self.cleaned_data["agent"] != Agent.CATALOGUER:
            return []
        return [int(pk) for pk in self.cleaned_data.get("images", [])]


class TakeForm(forms.Form):
    images = forms.MultipleChoiceField(widget=forms.CheckboxSelectMultiple, label="Inbox photos")

    def __init__(self, *args, images: list[tuple[int, str]], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["images"].choices = [(str(pk), label) for pk, label in images]


class CameraInput(forms.ClearableFileInput):
    """Several photos at once, from the phone's camera when the page is opened on one."""

    allow_multiple_selected = True


class PhotosField(forms.FileField):
    """A list of files (Django's documented way to take several in one field)."""

    def clean(self, data, initial=None):
        single = super().clean
        if isinstance(data, list | tuple):
            return [single(one, initial) for one in data] if data else single(None, initial)
        return [single(data, initial)]


class InboxForm(forms.Form):
    """Photos for the inbox. Each is checked by the chat's own image check (the message form's
    ``image`` field: size, format, pixels) and refused with its words; ``uploads`` holds the
    (file, extension) pairs that passed, all of them or none."""

    image = PhotosField(
        label="Photos",
        widget=CameraInput(attrs={"accept": "image/*", "capture": "environment"}),
    )

    def clean_image(self):
        files = self.cleaned_data["image"]
        self.uploads = []
        errors = []
        for upload in files:
            chat = MessageForm(data={}, files={"image": upload}, identities=[])
            if chat.is_valid():
                self.uploads.append((upload, chat.image_extension))
            else:
                errors.append(f"{upload.name}: {chat.first_error()}")
        if errors:
            raise forms.ValidationError(errors)
        return files


def too_many_photos() -> str:
    """Why a post of more photos than Django reads in one (``DATA_UPLOAD_MAX_NUMBER_FILES``)
    is refused."""
    at_once = counted(settings.DATA_UPLOAD_MAX_NUMBER_FILES, "photo")
    return f"At most {at_once} can be sent at once: send them in smaller groups."
