"""What the Lens pages accept: fragment keys and a path depth."""

from django import forms

from lens.extract import DEPTH_DEFAULT
from silentstar.forms import FirstError

DEPTH_MAX = 8


class KeysForm(FirstError):
    """One or more fragment keys, separated by spaces or commas, and the longest path."""

    keys = forms.CharField(max_length=2000, error_messages={"required": "Name a fragment key."})
    depth = forms.IntegerField(min_value=1, max_value=DEPTH_MAX, required=False)

    def clean_keys(self) -> list[str]:
        return list(dict.fromkeys(self.cleaned_data["keys"].replace(",", " ").split()))

    def clean_depth(self) -> int:
        return self.cleaned_data["depth"] or DEPTH_DEFAULT
