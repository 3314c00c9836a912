"""The Compass in the Anvil: consult it, watch it answer, decide on its proposals, edit its
prompts.

"Consult the Compass" (the consultations' list) holds the question box and the past
consultations. A consultation's page shows its status (polled with htmx while it is queued or
running), the review's findings, the reasoning, a picture of where the proposed plans fall
among the plans in working memory (``anvil.plans_picture``) and the proposals, each with its
plan, due (the owner's local time), hidden tick and why, editable while pending: "Promote
selected" promotes the ticked ones, with their edits, through
``mirror.services.suggestion_promote`` (the queue's one action), "Reject selected" rejects
them. A failed consultation shows its error and a Retry button. The proposals wait in the
suggestion queue too.
"""

from dataclasses import dataclass
from datetime import datetime

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Q
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.views.decorators.http import require_GET, require_POST

from anvil.pages import anvil_page, row_id
from anvil.plans_picture import plans_picture
from anvil.versions import PromptAdmin
from compass.models import CompassPrompt, Consultation, ConsultationKind
from compass.prompts import prompt_current
from compass.services import (
    QUESTION_CHARS_MAX,
    ConsultationError,
    consultation_ask,
    consultation_retry,
    review_ask,
)
from mirror.models import SuggestionStatus, TagSuggestion
from mirror.services import SuggestionError, suggestion_promote, suggestion_reject
from silentstar.when import when

PAGE_TEMPLATE = "admin/compass/consultation/consultation.html"
LIST_TEMPLATE = "admin/compass/consultation/consult.html"
LISTED = 50  # past consultations the page lists
POLL_SECONDS = 2


class AskForm(forms.Form):
    question = forms.CharField(
        max_length=QUESTION_CHARS_MAX,
        label="Your question",
        widget=forms.Textarea(attrs={"rows": 3, "cols": 80}),
        help_text="“A training plan for the next month”, “what should this week hold”, “help me "
        "prepare for the move”. The Compass answers with its reasoning and plans to decide on.",
    )


class MomentInput(forms.DateTimeInput):
    """A moment typed as every page says one, "6 Dec 2026, 04:34", in the owner's zone: the
    form shows it so (``silentstar.when``) and reads it back (``DATETIME_INPUT_FORMATS``)."""

    def format_value(self, value):
        return when(value) if isinstance(value, datetime) else super().format_value(value)


class ProposalForm(forms.Form):
    """One pending proposal as a person edits it before deciding; its prefix is its
    suggestion's id, its labels carry its number."""

    chosen = forms.BooleanField(required=False)
    content = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}))
    due = forms.DateTimeField(widget=MomentInput)
    hidden = forms.BooleanField(required=False)

    def __init__(self, *args, number: int, **kwargs):
        super().__init__(*args, label_suffix="", **kwargs)
        self.fields["chosen"].label = f"Choose plan {number}"
        self.fields["content"].label = f"Plan {number}"
        self.fields["due"].label = f"Due {number}"
        self.fields["hidden"].label = f"Hidden {number} (until 48 h before due)"

    @property
    def ticked(self) -> bool:
        return self.data.get(self.add_prefix("chosen")) in ("on", "true", "1")

    def edits_of(self, suggestion: TagSuggestion) -> dict:
        """What the person changed of the staged suggestion (a due to the minute, as the
        field shows it)."""
        staged = {
            "content": suggestion.content,
            "due": suggestion.due.replace(second=0, microsecond=0),
            "hidden": suggestion.hidden,
        }
        return {
            name: self.cleaned_data[name]
            for name, value in staged.items()
            if self.cleaned_data[name] != value
        }


@dataclass
class ProposalRow:
    number: int
    suggestion: TagSuggestion
    form: ProposalForm | None  # None once decided


def proposal_rows(consultation: Consultation, data=None) -> list[ProposalRow]:
    """The consultation's proposals in order, each pending one with its form (bound to
    ``data`` when given)."""
    rows = []
    proposals = consultation.proposals.select_related("suggestion").order_by("position")
    for proposal in proposals:
        suggestion = proposal.suggestion
        form = None
        if suggestion.status == SuggestionStatus.PENDING:
            form = ProposalForm(
                data,
                prefix=f"p{suggestion.pk}",
                number=proposal.position + 1,
                initial={
                    "content": suggestion.content,
                    "due": suggestion.due,
                    "hidden": suggestion.hidden,
                },
            )
        rows.append(ProposalRow(proposal.position + 1, suggestion, form))
    return rows


@admin.register(Consultation)
class ConsultationAdmin(admin.ModelAdmin):
    """Consult the Compass: the question box and past consultations as its list, one
    consultation as its page."""

    search_fields = ["question"]

    def has_delete_permission(self, request, obj=None):
        return False  # a consultation and its decisions are kept

    def get_urls(self):
        wrap = self.admin_site.admin_view
        return [
            path(
                "<int:consultation_id>/decide/",
                wrap(require_POST(self.decide_view)),
                name="compass_consultation_decide",
            ),
            path(
                "<int:consultation_id>/retry/",
                wrap(require_POST(self.retry_view)),
                name="compass_consultation_retry",
            ),
            path(
                "<int:consultation_id>/answer/",
                wrap(require_GET(self.answer_view)),
                name="compass_consultation_answer",
            ),
            *super().get_urls(),
        ]

    def changelist_view(self, request, extra_context=None):
        """The question box and the past consultations; posted to with ``_review``, a review
        asked for now."""
        if request.method == "POST" and "_review" in request.POST:
            return self._review_ask(request)
        if not self.has_view_permission(request):
            raise PermissionDenied
        return self._consult_page(request, AskForm())

    def _review_ask(self, request):
        if not self.has_add_permission(request):
            raise PermissionDenied
        try:
            review = review_ask(user=request.user)
        except ConsultationError as error:
            self.message_user(request, str(error), messages.WARNING)
            return HttpResponseRedirect(reverse("admin:compass_consultation_changelist"))
        return HttpResponseRedirect(reverse("admin:compass_consultation_change", args=[review.pk]))

    def _consult_page(self, request, form: AskForm, status: int = 200):
        consultations = Consultation.objects.annotate(
            proposed=Count("proposals"),
            promoted=Count(
                "proposals", filter=Q(proposals__suggestion__status=SuggestionStatus.PROMOTED)
            ),
        ).order_by("-created_at", "-id")
        searched = request.GET.get("q", "").strip()
        if searched:
            consultations = consultations.filter(question__icontains=searched)
        response = anvil_page(
            self,
            request,
            LIST_TEMPLATE,
            "Consult the Compass",
            form=form,
            may_ask=self.has_add_permission(request),
            consultations=consultations[:LISTED],
            searched=searched,
        )
        response.status_code = status
        return response

    def add_view(self, request, form_url="", extra_context=None):
        if not self.has_add_permission(request):
            raise PermissionDenied
        if request.method != "POST":
            return HttpResponseRedirect(reverse("admin:compass_consultation_changelist"))
        form = AskForm(request.POST)
        if form.is_valid():
            try:
                consultation = consultation_ask(
                    question=form.cleaned_data["question"], user=request.user
                )
            except ConsultationError as error:
                form.add_error("question", str(error))
            else:
                return HttpResponseRedirect(
                    reverse("admin:compass_consultation_change", args=[consultation.pk])
                )
        return self._consult_page(request, form, status=400)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        consultation = get_object_or_404(Consultation, pk=row_id(object_id))
        if not self.has_view_permission(request, consultation):
            raise PermissionDenied
        return self._page(request, consultation, proposal_rows(consultation))

    def _page(self, request, consultation, rows, *, status: int = 200, partial: bool = False):
        template = f"{PAGE_TEMPLATE}#answer" if partial else PAGE_TEMPLATE
        response = anvil_page(
            self,
            request,
            template,
            str(consultation),
            consultation=consultation,
            rows=rows,
            plans=plans_picture(consultation, [(row.number, row.suggestion) for row in rows]),
            pending=any(row.form is not None for row in rows),
            may_decide=self.has_change_permission(request, consultation),
            poll_seconds=POLL_SECONDS,
        )
        response.status_code = status
        return response

    def answer_view(self, request, consultation_id: int):
        """The consultation's answer region alone, which its page polls while it is under way;
        without htmx, the whole page."""
        if not request.htmx:
            return HttpResponseRedirect(
                reverse("admin:compass_consultation_change", args=[consultation_id])
            )
        consultation = get_object_or_404(Consultation, pk=consultation_id)
        if not self.has_view_permission(request, consultation):
            raise PermissionDenied
        return self._page(request, consultation, proposal_rows(consultation), partial=True)

    def decide_view(self, request, consultation_id: int):
        """Promote (with the person's edits) or reject the ticked proposals, each on its own:
        the page says which were done and why any were not."""
        consultation = get_object_or_404(Consultation, pk=consultation_id)
        if not self.has_change_permission(request, consultation):
            raise PermissionDenied
        page = reverse("admin:compass_consultation_change", args=[consultation_id])
        rows = proposal_rows(consultation, data=request.POST)
        ticked = [row for row in rows if row.form is not None and row.form.ticked]
        if not ticked:
            self.message_user(request, "Tick the proposals to decide on first.", messages.WARNING)
            return HttpResponseRedirect(page)
        promote = "_reject" not in request.POST
        if promote and not all([row.form.is_valid() for row in ticked]):
            return self._page(request, consultation, rows, status=400)
        done, refused = [], []
        for row in ticked:
            try:
                if promote:
                    item = suggestion_promote(
                        suggestion_id=row.suggestion.pk,
                        user_id=request.user.pk,
                        edits=row.form.edits_of(row.suggestion),
                    )
                    done.append(f"plan {row.number} into working memory (item {item.pk})")
                else:
                    suggestion_reject(suggestion_id=row.suggestion.pk, user_id=request.user.pk)
                    done.append(f"plan {row.number}")
            except SuggestionError as error:
                refused.append(f"Plan {row.number}: {error}")
        if done:
            verb = "Promoted" if promote else "Rejected"
            self.message_user(request, f"{verb} {', '.join(done)}.")
        if refused:
            self.message_user(request, f"Not acted on: {' '.join(refused)}", messages.WARNING)
        return HttpResponseRedirect(page)

    def retry_view(self, request, consultation_id: int):
        consultation = get_object_or_404(Consultation, pk=consultation_id)
        if not self.has_change_permission(request, consultation):
            raise PermissionDenied
        try:
            consultation_retry(consultation_id=consultation_id, user=request.user)
        except ConsultationError as error:
            self.message_user(request, str(error), messages.WARNING)
        else:
            self.message_user(request, "Asked again: the Compass is answering.")
        return HttpResponseRedirect(
            reverse("admin:compass_consultation_change", args=[consultation_id])
        )


@admin.register(CompassPrompt)
class CompassPromptAdmin(PromptAdmin):
    """The Compass's prompts: a consultation's and the review's."""

    default_kind = ConsultationKind.CONSULT

    def author_of(self, request):
        return request.user.get_username()  # a name: accounts live in another store

    def prompt_text(self, kind: str) -> str:
        return prompt_current(kind)
