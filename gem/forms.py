"""Forms of the Anvil's own admin pages (reshaping fragments, working-memory status)."""

from django import forms
from django.conf import settings

from gem.graph import DEPTH_MAX
from gem.models import WorkingMemoryStatus
from silentstar.uploads import megabytes


class RenameForm(forms.Form):
    new_key = forms.CharField(max_length=100, label="New key")


class FoldForm(forms.Form):
    into = forms.CharField(
        max_length=100,
        label="Fold into",
        help_text="The key of the fragment that stays; this one is folded into it and removed.",
    )


class GraphForm(forms.Form):
    key = forms.CharField(max_length=100, required=False, label="Around key")
    depth = forms.IntegerField(min_value=1, max_value=DEPTH_MAX, initial=1, required=False)


DRAFT_SUFFIXES = (".md", ".markdown", ".txt")


class DraftForm(forms.Form):
    """A Lens draft, pasted or uploaded (one of the two), of at most ``DRAFT_MAX_BYTES``."""

    text = forms.CharField(
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 18, "cols": 90, "spellcheck": "false"}),
        label="Paste a draft",
    )
    upload = forms.FileField(required=False, label="or upload a .md file")

    def clean(self):
        text, upload = self.cleaned_data.get("text", ""), self.cleaned_data.get("upload")
        if upload and text.strip():
            raise forms.ValidationError("Paste a draft or upload one, not both.")
        limit = settings.DRAFT_MAX_BYTES
        if upload:
            if not upload.name.lower().endswith(DRAFT_SUFFIXES):
                raise forms.ValidationError(
                    f"“{upload.name}” is not a draft: send a {', '.join(DRAFT_SUFFIXES)} file."
                )
            if upload.size > limit:
                raise _too_large(f"“{upload.name}”", upload.size, limit)
            try:
                text = upload.read().decode("utf-8")
            except UnicodeDecodeError as error:
                raise forms.ValidationError(
                    f"“{upload.name}” is not UTF-8 text (byte {error.start})."
                ) from None
        if not text.strip():
            raise forms.ValidationError("The draft is empty.")
        if len(text.encode()) > limit:
            raise _too_large("The draft", len(text.encode()), limit)
        self.cleaned_data["text"] = text
        return self.cleaned_data


def _too_large(what: str, size: int, limit: int) -> forms.ValidationError:
    return forms.ValidationError(
        f"{what} is {megabytes(size)}; drafts may be at most {megabytes(limit)}.",
        code="too_large",
    )


class StatusForm(forms.Form):
    status = forms.ChoiceField(choices=WorkingMemoryStatus.choices)
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
        help_text="Kept in each item's history.",
    )
