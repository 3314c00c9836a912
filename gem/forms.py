"""Forms of the Anvil's own admin pages (reshaping fragments, working-memory status)."""

from django import forms

from gem.graph import DEPTH_MAX
from gem.models import WorkingMemoryStatus


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


class StatusForm(forms.Form):
    status = forms.ChoiceField(choices=WorkingMemoryStatus.choices)
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
        help_text="Kept in each item's history.",
    )
