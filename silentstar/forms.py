"""What every form of the project shares: one readable reason when it is refused."""

from django import forms


class FirstError(forms.Form):
    """A form that says why it was refused in one sentence: its first error."""

    refused = "The form could not be read."  # said when no field holds an error

    def first_error(self) -> str:
        for errors in self.errors.values():
            if errors:
                return errors[0]
        return self.refused
