"""Working memory in the Anvil: the live score, an item added or edited by the Gem's rules,
status changes with a reason, near duplicates reviewed beside their twins, Mira's entries."""

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import Case, FloatField, Value, When
from django.db.models.functions import Coalesce
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html

from anvil.decay_picture import decay_picture
from anvil.forms import (
    StatusForm,
    TwinReviewForm,
    WorkingMemoryForm,
)
from anvil.pages import anvil_page, cut_text, event_list, identity_name
from gem.models import (
    Forgotten,
    MiraEntry,
    WorkingMemory,
    WorkingMemoryRef,
    WorkingMemorySource,
)
from gem.selectors import (
    gem_current,
    working_memory_scored,
)
from gem.services import (
    WorkingMemoryError,
    working_memory_create,
    working_memory_forget,
    working_memory_status_set,
    working_memory_twin_review,
    working_memory_update,
)
from gem.state import ARCHIVE_WARNING, state_get, turn_counter_current
from silentstar.admin import ReadOnlyAdmin
from silentstar.when import when_short
from silentstar.words import counted


class WorkingMemoryRefInline(admin.TabularInline):
    model = WorkingMemoryRef
    extra = 0
    autocomplete_fields = ["fragment"]


class NearDuplicateFilter(admin.SimpleListFilter):
    title = "near duplicates"
    parameter_name = "near"

    def lookups(self, request, model_admin):
        return [("review", "near duplicates to review")]

    def queryset(self, request, queryset):
        if self.value() == "review":
            return queryset.filter(near_duplicate_of__isnull=False)
        return queryset


def _twin_link(item: WorkingMemory) -> str:
    url = reverse("admin:gem_workingmemory_change", args=[item.near_duplicate_of_id])
    return format_html(
        '<a class="anvil-twin" href="{}">near duplicate of #{}</a>', url, item.near_duplicate_of_id
    )


@admin.register(WorkingMemory)
class WorkingMemoryAdmin(admin.ModelAdmin):
    # The words and the due date first: on a phone the rest is a sideways scroll away.
    list_display = [
        "id",
        "content_excerpt",
        "due_date",
        "type",
        "subject",
        "status",
        "live_score",
        "importance",
        "valence",
        "actor_name",
    ]
    list_filter = [NearDuplicateFilter, "type", "status", "actor", "refreshed_at"]
    list_select_related = ["near_duplicate_of"]
    search_fields = ["content", "subject"]
    date_hierarchy = "created_at"
    inlines = [WorkingMemoryRefInline]
    actions = ["status_change", "forget_selected"]
    form = WorkingMemoryForm
    add_fields = ["type", "content", "subject", "due", "hidden", "importance", "valence"]
    readonly_fields = [
        "twin",
        "importance_edited",
        "semantic_hash",
        "status",
        "actor",
        "suggestion_link",
        "event_id",
        "source_event_list",
        "turn",
        "created_at",
        "refreshed_at",
        "resolved_at",
    ]

    def get_fields(self, request, obj=None):
        # New items are the person's own and active; status changes go through the action,
        # which asks for a reason.
        return self.add_fields if obj is None else [*self.add_fields, *self.readonly_fields]

    def get_readonly_fields(self, request, obj=None):
        return [] if obj is None else self.readonly_fields

    def save_model(self, request, obj, form, change):
        # The form's instance holds what the person asked for; the item is written by the rules
        # every writer follows, and the instance becomes what was written. A number the person
        # gives wins over the scoring, now and on every later refresh.
        person_scored = form.numbers_set_by_person()
        importance = form.cleaned_data["importance"] if person_scored else None
        valence = form.cleaned_data["valence"] if person_scored else None
        if change:
            working_memory_update(
                item_id=obj.pk,
                at=timezone.now(),
                user_id=request.user.pk,
                type=obj.type,
                content=obj.content,
                subject=obj.subject,
                due=obj.due,
                hidden=obj.hidden,
                importance=importance,
                valence=valence,
            )
        else:
            # One feeling, descs superseded by subject, a plan's due date read from its words if
            # none is given, importance and valence scored unless given; or the identical item
            # refreshed.
            obj.pk = working_memory_create(
                type=obj.type,
                content=obj.content,
                subject=obj.subject,
                actor=request.user.get_username(),
                at=timezone.now(),
                turn=turn_counter_current(),
                due=obj.due,
                hidden=obj.hidden,
                importance=importance,
                valence=valence,
            ).item.pk
        obj.refresh_from_db()

    def log_change(self, request, obj, message):
        """An edit of the item is written in the admin log by ``working_memory_update``, with
        what its rules did; here only what the inline forms changed (its fragment links) is."""
        linked = [
            entry
            for entry in (message if isinstance(message, list) else [])
            if any("object" in detail for detail in entry.values())
        ]
        if linked:
            return super().log_change(request, obj, linked)
        return None

    def changelist_view(self, request, extra_context=None):
        if warning := state_get(ARCHIVE_WARNING, ""):  # the last archive run's word on size
            self.message_user(request, warning, messages.WARNING)
        return super().changelist_view(request, extra_context)

    def get_queryset(self, request):
        """In the list, every active item carries its live decay score (sortable)."""
        queryset = super().get_queryset(request)
        match = request.resolver_match
        if match is None or match.url_name != "gem_workingmemory_changelist":
            return queryset
        by_score: dict[float, list[int]] = {}
        for row, score in working_memory_scored(
            gem_current().working_memory, now=timezone.now(), current_turn=turn_counter_current()
        ):
            by_score.setdefault(round(score, 4), []).append(row.id)
        whens = [When(pk__in=ids, then=Value(score)) for score, ids in by_score.items()]
        return queryset.annotate(live_score=Case(*whens, default=None, output_field=FloatField()))

    # Items not active have no score: below every score, on SQLite and PostgreSQL alike.
    @admin.display(description="live score", ordering=Coalesce("live_score", Value(-1.0)))
    def live_score(self, item):
        score = getattr(item, "live_score", None)
        return "—" if score is None else f"{score:.3f}"

    @admin.display(description="content")
    def content_excerpt(self, item):
        if item.near_duplicate_of_id is None:
            return cut_text(item.content)
        return format_html("{} {}", cut_text(item.content), _twin_link(item))

    @admin.display(description="due", ordering="due")
    def due_date(self, item):
        return when_short(item.due)

    @admin.display(description="actor", ordering="actor")
    def actor_name(self, item):
        return identity_name(item.actor)

    @admin.display(description="near duplicate")
    def twin(self, item):
        return "—" if item.near_duplicate_of_id is None else _twin_link(item)

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        # A flagged item's page opens on it beside its twin, with the decision to make.
        if obj is not None and obj.near_duplicate_of_id is not None:
            context["twin"] = obj.near_duplicate_of
            context["twin_form"] = TwinReviewForm()
        if obj is not None:
            context["decay_picture"] = decay_picture(obj, now=timezone.now())
        return super().render_change_form(request, context, add, change, form_url, obj)

    @admin.display(description="promoted from")
    def suggestion_link(self, item):
        if item.suggestion_id is None:
            return "—"
        url = reverse("admin:mirror_tagsuggestion_change", args=[item.suggestion_id])
        return format_html('<a href="{}">Mirror suggestion {}</a>', url, item.suggestion_id)

    @admin.display(description="source events")
    def source_event_list(self, item):
        """The events the item came from (a promoted suggestion's, recorded when promoted), or
        the one it was tagged in; read from the event log in one query."""
        ids = list(item.sources.values_list("event_id", flat=True))
        if not ids and item.event_id is not None:
            ids = [item.event_id]
        if not ids:
            return "—"
        return event_list(ids)

    def get_urls(self):
        status = self.admin_site.admin_view(self.status_view)
        twin = self.admin_site.admin_view(self.twin_view)
        return [
            path("<path:object_id>/status/", status, name="gem_workingmemory_status"),
            path("<path:object_id>/twin/", twin, name="gem_workingmemory_twin"),
            *super().get_urls(),
        ]

    def twin_view(self, request, object_id):
        """A person's decision on a near duplicate: keep both, or drop one of the two (a status
        change with a reason). Either way the flag is cleared, and the admin log says why."""
        item = get_object_or_404(WorkingMemory, pk=unquote(object_id))
        change_url = reverse("admin:gem_workingmemory_change", args=[item.pk])
        if request.method != "POST":
            return HttpResponseRedirect(change_url)
        if not self.has_change_permission(request, item):
            raise PermissionDenied
        form = TwinReviewForm(request.POST)
        if not form.is_valid():
            for errors in form.errors.values():
                self.message_user(request, " ".join(errors), messages.ERROR)
            return HttpResponseRedirect(change_url)
        try:
            done = working_memory_twin_review(
                item_id=item.pk,
                decision=form.decision,
                reason=form.cleaned_data["reason"].strip(),
                user_id=request.user.pk,
                now=timezone.now(),
            )
        except WorkingMemoryError as error:
            self.message_user(request, str(error))
        else:
            self.message_user(request, f"{done}.")
        return HttpResponseRedirect(change_url)

    def status_view(self, request, object_id):
        """The status change of one item, from its own page: the action, for that item."""
        item = get_object_or_404(WorkingMemory, pk=unquote(object_id))
        if not self.has_change_permission(request, item):
            raise PermissionDenied
        page = self.status_change(request, WorkingMemory.objects.filter(pk=item.pk))
        return page or HttpResponseRedirect(
            reverse("admin:gem_workingmemory_change", args=[item.pk])
        )

    @admin.action(
        description="Forget the selected items (dropped; their words never staged again)",
        permissions=["change"],
    )
    def forget_selected(self, request, queryset):
        forgotten = list(queryset.values_list("pk", flat=True))
        working_memory_forget(
            item_ids=forgotten,
            by=request.user.get_username(),
            user_id=request.user.pk,
            now=timezone.now(),
        )
        self.message_user(
            request,
            f"Forgot {len(forgotten)} item{'s' if len(forgotten) != 1 else ''}: dropped, and "
            "their words are never staged again.",
        )

    @admin.action(
        description="Change the status of the selected items (with a reason)",
        permissions=["change"],
    )
    def status_change(self, request, queryset):
        form = StatusForm(request.POST if "apply" in request.POST else None)
        if form.is_valid():
            try:
                changed = working_memory_status_set(
                    item_ids=list(queryset.values_list("pk", flat=True)),
                    status=form.cleaned_data["status"],
                    reason=form.cleaned_data["reason"],
                    user_id=request.user.pk,
                    now=timezone.now(),
                )
            except WorkingMemoryError as error:
                form.add_error(None, str(error))
            else:
                self.message_user(
                    request,
                    f"{counted(len(changed), 'item')} now {form.cleaned_data['status']}; "
                    "the reason is in each item's history.",
                )
                return None
        return anvil_page(
            self,
            request,
            "admin/gem/workingmemory/status.html",
            "Change the status of working memory",
            form=form,
            items=queryset,
            action_checkbox_name=admin.helpers.ACTION_CHECKBOX_NAME,
        )


@admin.register(Forgotten)
class ForgottenAdmin(ReadOnlyAdmin):
    """Words a person forgot: never staged again. Written by the "Forget" actions alone."""

    list_display = ["source", "type", "content", "forgotten_by", "forgotten_at"]
    list_filter = ["type"]
    search_fields = ["content", "source"]


@admin.register(WorkingMemoryRef)
class WorkingMemoryRefAdmin(admin.ModelAdmin):
    list_display = ["wm", "fragment"]
    search_fields = ["fragment__key", "wm__content"]
    list_select_related = ["wm", "fragment"]
    autocomplete_fields = ["fragment"]
    raw_id_fields = ["wm"]


@admin.register(WorkingMemorySource)
class WorkingMemorySourceAdmin(ReadOnlyAdmin):
    """Where items came from: recorded when they are written, never typed, so only read here."""

    list_display = ["wm", "event_id"]
    search_fields = ["wm__content"]
    list_select_related = ["wm"]


@admin.register(MiraEntry)
class MiraEntryAdmin(ReadOnlyAdmin):
    """Mira's entries as they were imported (``manage.py mira import``), kept for the export:
    only read here."""

    list_display = ["mira_id", "working_memory", "event_id", "imported_at"]
    search_fields = ["mira_id"]
    list_select_related = ["working_memory"]
