""" "Why didn't she know X?" in the Anvil: the form, and a verdict per turn (``heart.why``, which
``manage.py why`` prints too)."""

from django import forms
from django.core.exceptions import PermissionDenied
from django.template.response import TemplateResponse

from heart.why import TURNS_DEFAULT, TURNS_MAX, WhyError, why

VIEW_PERMISSION = "heart.view_contextsnapshot"


class WhyForm(forms.Form):
    asked = forms.CharField(
        label="Why didn't she know",
        max_length=500,
        help_text="A working-memory item (#12), a fragment key, or some words.",
    )
    turns = forms.IntegerField(
        label="over the last turns",
        min_value=1,
        max_value=TURNS_MAX,
        initial=TURNS_DEFAULT,
        required=False,
    )


def why_view(site, request) -> TemplateResponse:
    """The question's form and, once asked, the answer for each of the last turns."""
    if not request.user.has_perm(VIEW_PERMISSION):
        raise PermissionDenied
    form = WhyForm(request.GET or None)
    answer = None
    if form.is_valid():
        try:
            answer = why(
                form.cleaned_data["asked"], turns=form.cleaned_data["turns"] or TURNS_DEFAULT
            )
        except WhyError as error:
            form.add_error("asked", str(error))
    return TemplateResponse(
        request,
        "anvil/why.html",
        {
            **site.each_context(request),
            "title": "Why didn't she know…?",
            "form": form,
            "answer": answer,
        },
    )
