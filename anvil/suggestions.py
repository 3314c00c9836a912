"""The Mirror's output in the Anvil: summaries, the suggestion queue (promote and reject, one by
one or in bulk; the Compass's plans and the Loom's patterns wait there too), runs."""

from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin.views.main import ChangeList
from django.http import HttpResponseRedirect
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from anvil.pages import cut_text, event_list
from anvil.waiting import summaries_waiting
from events.models import Event
from gem.state import chars_per_token
from mirror.models import (
    MirrorRun,
    SuggestionStatus,
    Summary,
    TagSuggestion,
)
from mirror.services import (
    SuggestionError,
    suggestion_edit,
    suggestion_forget,
    suggestion_promote,
    suggestion_reject,
)
from silentstar.pricing import for_model
from silentstar.tokens import estimate_tokens
from silentstar.when import when_short
from silentstar.words import counted, cut_words, quoted


class TagSuggestionInline(admin.TabularInline):
    """A summary's suggestions, to read: they are decided on in the queue, one way only."""

    model = TagSuggestion
    extra = 0
    fields = ["type", "content", "subject", "status", "promoted_wm_id"]
    readonly_fields = fields
    show_change_link = True
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


class WaitingFilter(admin.SimpleListFilter):
    """The current summaries written before a correction of what they cover: withheld from the
    context until the Mirror writes them again (``mirror.rebuild.stale_rebuilt``)."""

    title = "corrections"
    parameter_name = "waiting"

    def lookups(self, request, model_admin):
        return [("yes", "waiting to be written again")]

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.filter(pk__in=summaries_waiting())
        return queryset


@admin.register(Summary)
class SummaryAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "level",
        "first_event_id",
        "last_event_id",
        "tokens",
        "created_at",
        "is_current",
        "waiting",
    ]
    list_filter = [WaitingFilter, "level", "created_at"]
    search_fields = ["content"]
    inlines = [TagSuggestionInline]
    raw_id_fields = ["superseded_by"]

    @admin.display(boolean=True, description="current")
    def is_current(self, summary):
        return summary.superseded_by_id is None

    def get_changelist(self, request, **kwargs):
        return WaitingChangeList

    @admin.display(description="written again")
    def waiting(self, summary):
        """For a summary that waits: what writing it again reads, and costs at the summarising
        model's input price (an L1 or L2 merges its parts, which cost less)."""
        if not getattr(summary, "waits", False):
            return ""
        said = Event.objects.filter(
            pk__gte=summary.first_event_id, pk__lte=summary.last_event_id
        ).values_list("content", flat=True)
        tokens = estimate_tokens("".join(said), chars_per_token())
        price = for_model(settings.MODEL_PRICES, settings.MIRROR_SUMMARISE_MODEL)
        cost = f", about ${tokens * price.input / 1_000_000:.4f}" if price else ""
        return f"waits: reads {tokens:,} tokens of the log{cost}"


class WaitingChangeList(ChangeList):
    """The summaries' list, each of its page marked ``waits`` when it waits to be written again:
    the corrections read once for the page, not once a row."""

    def get_results(self, request):
        super().get_results(request)
        waiting = summaries_waiting()
        for summary in self.result_list:
            summary.waits = summary.pk in waiting


class SuggestionStatusFilter(admin.SimpleListFilter):
    """The queue opens on what is waiting: pending unless another status (or all) is chosen."""

    title = "status"
    parameter_name = "status"

    def lookups(self, request, model_admin):
        return [*SuggestionStatus.choices, ("all", "All")]

    def choices(self, changelist):
        chosen = self.value() or SuggestionStatus.PENDING
        for value, label in self.lookup_choices:
            yield {
                "selected": chosen == value,
                "query_string": changelist.get_query_string({self.parameter_name: value}),
                "display": label,
            }

    def queryset(self, request, queryset):
        chosen = self.value() or SuggestionStatus.PENDING
        return queryset if chosen == "all" else queryset.filter(status=chosen)


SOURCE_EVENTS_SHOWN = 50


@admin.register(TagSuggestion)
class TagSuggestionAdmin(admin.ModelAdmin):
    """The suggestion queue: edit a pending suggestion, promote it into working memory or
    reject it, one at a time from its page or in bulk from the list."""

    list_display = [
        "id",
        "content_excerpt",
        "type",
        "subject",
        "status",
        "summary_excerpt",
        "promoted_link",
        "created",
    ]
    list_filter = [SuggestionStatusFilter, "proposer", "type", "created_at"]
    list_select_related = ["summary"]
    # A summary's suggestions side by side, the newest summary's first.
    ordering = ["-summary_id", "id"]
    search_fields = ["content", "subject"]
    actions = ["promote_selected", "reject_selected", "forget_selected"]
    # editable until the suggestion is decided
    decided_fields = ["type", "content", "subject", "due", "hidden"]
    readonly_fields = [
        "proposer",
        "reason",
        "status",
        "promoted_link",
        "decided_at",
        "summary_text",
        "source_events",
        "created_at",
    ]
    fields = [*decided_fields, *readonly_fields]

    def has_add_permission(self, request):
        return False  # the Mirror stages suggestions; a person decides on them

    def has_delete_permission(self, request, obj=None):
        return False  # a decision is kept, whichever it was

    def get_readonly_fields(self, request, obj=None):
        if obj is not None and obj.status != SuggestionStatus.PENDING:
            return [*self.decided_fields, *self.readonly_fields]
        return self.readonly_fields

    def get_changelist_instance(self, request):
        """The list, each suggestion marked when it is the first of its summary's on the page:
        the summary is shown there once, not on every row."""
        changelist = super().get_changelist_instance(request)
        previous = None
        for suggestion in changelist.result_list:
            suggestion.opens_summary = suggestion.summary_id != previous
            previous = suggestion.summary_id
        return changelist

    @admin.display(description="made", ordering="created_at")
    def created(self, suggestion):
        return when_short(suggestion.created_at)

    @admin.display(description="content")
    def content_excerpt(self, suggestion):
        """The words, then a plan's due date and whether it is hidden (a column of their own
        would push the list past a laptop's width)."""
        text = cut_text(suggestion.content)
        if suggestion.due is None:
            return text
        hidden = ", hidden until 48 h before" if suggestion.hidden else ""
        return format_html(
            '{}<span class="anvil-event-meta">due {}{}</span>',
            text,
            when_short(suggestion.due),
            hidden,
        )

    @admin.display(description="from", ordering="proposer")
    def summary_excerpt(self, suggestion):
        """The summary a Mirror suggestion came from; another agent's name and its reason."""
        summary = suggestion.summary
        if summary is None:
            return format_html(
                '<span class="anvil-event-meta">{}</span>{}',
                suggestion.get_proposer_display(),
                cut_text(suggestion.reason) if suggestion.reason else "",
            )
        if not getattr(suggestion, "opens_summary", True):
            return mark_safe('<span class="anvil-quiet">same summary as above</span>')
        return format_html(
            '{}<span class="anvil-event-meta">events {}–{}</span>',
            cut_text(summary.content),
            summary.first_event_id,
            summary.last_event_id,
        )

    @admin.display(description="working memory")
    def promoted_link(self, suggestion):
        if suggestion.promoted_wm_id is None:
            return "—"
        url = reverse("admin:gem_workingmemory_change", args=[suggestion.promoted_wm_id])
        return format_html('<a href="{}">item {}</a>', url, suggestion.promoted_wm_id)

    @admin.display(description="summary")
    def summary_text(self, suggestion):
        summary = suggestion.summary
        if summary is None:
            return "—"
        url = reverse("admin:mirror_summary_change", args=[summary.pk])
        return format_html(
            '<a href="{}">{}</a><p class="anvil-prose">{}</p>', url, summary, summary.content
        )

    @admin.display(description="source events")
    def source_events(self, suggestion):
        summary = suggestion.summary
        if summary is None:
            return "—"
        events = list(
            Event.objects.filter(
                pk__gte=summary.first_event_id, pk__lte=summary.last_event_id
            ).order_by("pk")[: SOURCE_EVENTS_SHOWN + 1]
        )
        more = len(events) > SOURCE_EVENTS_SHOWN
        shown = {event.pk: event for event in events[:SOURCE_EVENTS_SHOWN]}
        return event_list(
            shown, shown, note=f"(the first {SOURCE_EVENTS_SHOWN} shown)" if more else ""
        )

    def save_model(self, request, obj, form, change):
        """A person's edits of a pending suggestion, written by the queue's service."""
        edits = {name: form.cleaned_data[name] for name in form.changed_data}
        obj.refused = ""
        if edits:
            try:
                suggestion_edit(suggestion_id=obj.pk, edits=edits)
            except SuggestionError as error:
                obj.refused = str(error)

    def log_change(self, request, obj, message):
        if not obj.refused:
            super().log_change(request, obj, message)

    def response_change(self, request, obj):
        if obj.refused:
            self.message_user(request, f"Not saved: {obj.refused}", messages.ERROR)
            return HttpResponseRedirect(request.path)
        if "_promote" in request.POST or "_reject" in request.POST:
            self._decide(request, [obj.pk], promote="_promote" in request.POST)
            return HttpResponseRedirect(reverse("admin:mirror_tagsuggestion_changelist"))
        return super().response_change(request, obj)

    @admin.action(
        description="Promote the selected suggestions into working memory", permissions=["change"]
    )
    def promote_selected(self, request, queryset):
        self._decide(request, self._chosen(request, queryset), promote=True)

    @admin.action(description="Reject the selected suggestions", permissions=["change"])
    def reject_selected(self, request, queryset):
        self._decide(request, self._chosen(request, queryset), promote=False)

    @admin.action(
        description="Forget the selected suggestions (rejected; their words never staged again)",
        permissions=["change"],
    )
    def forget_selected(self, request, queryset):
        done, refused = [], []
        for suggestion_id in self._chosen(request, queryset):
            try:
                suggestion_forget(
                    suggestion_id=suggestion_id,
                    user_id=request.user.pk,
                    by=request.user.get_username(),
                )
                done.append(str(suggestion_id))
            except SuggestionError as error:
                refused.append(str(error))
        if done:
            self.message_user(
                request,
                f"Forgot {len(done)}: {', '.join(done)}; their words are never staged again.",
            )
        if refused:
            self.message_user(request, f"Not acted on: {' '.join(refused)}", messages.WARNING)

    @staticmethod
    def _chosen(request, queryset) -> list[int]:
        """The suggestions ticked, including any the list no longer shows (decided on since the
        page was drawn): each is answered, if only to say it was already decided."""
        ticked = request.POST.getlist(admin.helpers.ACTION_CHECKBOX_NAME)
        return sorted(
            {*queryset.values_list("pk", flat=True), *(int(t) for t in ticked if t.isdigit())}
        )

    def _decide(self, request, suggestion_ids: list[int], *, promote: bool) -> None:
        """Promote or reject each suggestion; say which were done and why any were not."""
        done, refused = [], []
        for suggestion_id in suggestion_ids:
            try:
                if promote:
                    item = suggestion_promote(suggestion_id=suggestion_id, user_id=request.user.pk)
                    done.append(f"{quoted(cut_words(item.content))} (item {item.pk})")
                else:
                    suggestion = suggestion_reject(
                        suggestion_id=suggestion_id, user_id=request.user.pk
                    )
                    done.append(quoted(cut_words(suggestion.content)))
            except SuggestionError as error:
                refused.append(str(error))
        if done:
            what = counted(len(done), "suggestion") if len(done) > 1 else ""
            verb = f"Promoted {what} into working memory" if promote else f"Rejected {what}"
            self.message_user(request, f"{' '.join(verb.split())}: {', '.join(done)}.")
        if refused:
            self.message_user(request, f"Not acted on: {' '.join(refused)}", messages.WARNING)


@admin.register(MirrorRun)
class MirrorRunAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "kind",
        "status",
        "route",
        "first_event_id",
        "last_event_id",
        "started_at",
        "completed_at",
        "short_error",
    ]
    list_filter = ["kind", "status", "route", "started_at"]
    search_fields = ["error"]

    @admin.display(description="error")
    def short_error(self, run):
        return run.error[:80]
