"""Forms of the Anvil: its own admin pages (reshaping fragments, working-memory status) and
working memory's form."""

from django import forms
from django.conf import settings

from anvil.graph import DEPTH_MAX
from gem.keys import twin_refusal
from gem.models import TIERS, Fragment, WorkingMemory, WorkingMemoryStatus
from gem.services import TwinDecision, hidden_allowed
from gem.state import chars_per_token
from gem.tier_size import tier_refusal
from gem.waking import TRIGGER_CHARS_MAX, triggers_problem
from silentstar.forms import FirstError
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


class WorkingMemoryForm(forms.ModelForm):
    """Working memory in the Anvil, with its importance and valence.

    Left empty, the two numbers are scored when an item is added (``gem.importance``) and stay
    as they are when one is changed; a person's number wins over the scoring.
    """

    importance = forms.FloatField(
        required=False,
        min_value=0,
        max_value=1,
        help_text="0 to 1. Leave empty to let the scoring decide.",
        error_messages={
            "min_value": "Importance runs from 0 to 1.",
            "max_value": "Importance runs from 0 to 1.",
        },
    )
    valence = forms.FloatField(
        required=False,
        min_value=-1,
        max_value=1,
        help_text="-1 (negative) to +1 (positive), 0 neutral. Empty: read from the words.",
        error_messages={
            "min_value": "Valence runs from -1 to +1.",
            "max_value": "Valence runs from -1 to +1.",
        },
    )

    class Meta:
        model = WorkingMemory
        fields = ["type", "content", "subject", "due", "hidden", "importance", "valence"]

    def clean(self):
        """A hidden item is a plan with a due date (``gem.services.hidden_allowed``), said on
        the field to change."""
        cleaned = super().clean()
        type_, due = cleaned.get("type"), cleaned.get("due")
        if cleaned.get("hidden") and not hidden_allowed(type_, due):
            if type_ == "plan":
                self.add_error(
                    "due", "A hidden plan needs a due date: it resurfaces 48 hours before."
                )
            else:
                self.add_error("hidden", "Only a plan can be hidden.")
        return cleaned

    def clean_importance(self):
        return self._number_or_current("importance")

    def clean_valence(self):
        return self._number_or_current("valence")

    def _number_or_current(self, name: str) -> float | None:
        value = self.cleaned_data[name]
        if value is None and self.instance.pk is not None:
            return getattr(self.instance, name)
        return value

    def numbers_set_by_person(self) -> bool:
        """Whether the person gave importance or valence a value of their own here."""
        return any(
            self.cleaned_data.get(name) is not None
            and self.cleaned_data[name] != self.initial.get(name)
            for name in ("importance", "valence")
        )


class TwinReviewForm(forms.Form):
    """A person's decision on a near duplicate and its twin (the buttons' names)."""

    KEEP_BOTH, DROP_THIS, DROP_TWIN = (
        TwinDecision.KEEP_BOTH,
        TwinDecision.DROP_THIS,
        TwinDecision.DROP_TWIN,
    )

    reason = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "cols": 60}),
        help_text="Why one is dropped; kept in its history. Not needed to keep both.",
    )

    def __init__(self, data=None, **kwargs):
        super().__init__(data, **kwargs)
        self.decision = next(
            (
                name
                for name in (self.KEEP_BOTH, self.DROP_THIS, self.DROP_TWIN)
                if name in (data or {})
            ),
            None,
        )

    def clean(self):
        if self.decision is None:
            raise forms.ValidationError("Choose: keep both, drop this one, or drop its twin.")
        if self.decision != self.KEEP_BOTH and not self.cleaned_data.get("reason", "").strip():
            self.add_error("reason", "Say why it is dropped: the reason is kept in its history.")
        return self.cleaned_data


class TriggersField(forms.CharField):
    """A fragment's triggers, one a line in a text area; blank lines are left out."""

    widget = forms.Textarea(attrs={"rows": 4, "cols": 40, "spellcheck": "false"})

    def prepare_value(self, value):
        return "\n".join(value) if isinstance(value, list) else value

    def to_python(self, value) -> list[str]:
        return [line.strip() for line in (value or "").splitlines() if line.strip()]

    def validate(self, value) -> None:
        if problem := triggers_problem(value):
            raise forms.ValidationError(problem)


class FragmentForm(forms.ModelForm):
    """A fragment's key, tiers and triggers; the Gem's checks of them said under each field (a
    key another fragment has but for case, a tier past the most a tier may hold)."""

    triggers = TriggersField(
        required=False,
        help_text="Words or phrases that wake this fragment when the person says them, besides "
        "its key: one a line.",
    )

    class Meta:
        model = Fragment
        fields = ["key", *TIERS, "triggers"]
        error_messages = {
            "key": {"unique": "Another fragment has this key: choose another, or edit that one."}
        }

    def clean_key(self):
        key = self.cleaned_data["key"]
        if twin := twin_refusal([key], fragment_model=Fragment):
            raise forms.ValidationError(twin)
        return key

    def clean(self):
        cleaned = super().clean()
        key = self.instance.key or cleaned.get("key") or self.data.get("key", "")
        cpt = chars_per_token()
        for tier in TIERS:
            text = cleaned.get(tier, "")
            if refusal := tier_refusal(key, tier, text, chars_per_token=cpt):
                self.add_error(tier, refusal)
        return cleaned


class TriggerAddForm(forms.Form):
    """One more trigger for a fragment only its exact key reaches."""

    trigger = forms.CharField(max_length=TRIGGER_CHARS_MAX, label="Add a trigger")


class DrawerFilterForm(FirstError):
    """Whose memory the drawer shows: an identity, or everyone (empty)."""

    identity = forms.CharField(required=False, max_length=64)

    def __init__(self, *args, identities: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.identities = identities

    def clean_identity(self) -> str:
        identity = self.cleaned_data["identity"].strip()
        if identity and identity.casefold() not in {name.casefold() for name in self.identities}:
            raise forms.ValidationError(f"Nobody called “{identity}” talks here.")
        return identity


class DrawerItemForm(FirstError):
    """An edit of a lingering item from the drawer: its words, and a plan's due date."""

    content = forms.CharField(
        error_messages={"required": "Write what the item says (or forget it)."},
    )
    due = forms.DateTimeField(
        required=False,
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
        error_messages={"invalid": "Give the due date as a date and a time."},
    )


class DrawerDecisionForm(DrawerItemForm):
    """A decision on a pending suggestion from the drawer, with the person's edits."""

    PROMOTE = "promote"
    REJECT = "reject"

    decision = forms.ChoiceField(
        choices=[(PROMOTE, "promote"), (REJECT, "reject")],
        error_messages={"required": "Say whether to promote or reject it."},
    )
    content = forms.CharField(required=False)

    def edits_of(self, suggestion) -> dict:
        """What the person changed of the suggestion's words and due date."""
        edits = {}
        content = self.cleaned_data["content"].strip()
        if content and content != suggestion.content:
            edits["content"] = content
        if due_changed(self.cleaned_data["due"], suggestion.due):
            edits["due"] = self.cleaned_data["due"]
        return edits


def due_changed(given, due) -> bool:
    """Whether a due date typed in a form (to the minute, as the form shows it) moves ``due``."""
    if given is None:
        return False
    return due is None or given != due.replace(second=0, microsecond=0)
