"""The Anvil: every Gem model in the admin, and its own pages for what a plain form cannot do —
renaming and folding fragments with a preview, applying a Lens draft after its preview, the graph
picture, versions of ambient prose and wake texts compared, working-memory status changes with a
reason, near duplicates reviewed beside their twins.

Each page is a thin view over a service (``gem/services.py``) or a read (``gem/graph.py``,
``gem/selectors.py``); every write leaves an admin log entry.
"""

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.db import models
from django.db.models import Case, Exists, FloatField, OuterRef, Q, Value, When
from django.db.models.functions import Coalesce
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.text import Truncator

from gem.draft import DraftDiff, DraftError, draft_diff, draft_parse
from gem.drafts import draft_apply
from gem.forms import (
    DraftForm,
    FoldForm,
    GraphForm,
    RenameForm,
    StatusForm,
    TwinReviewForm,
    WorkingMemoryForm,
)
from gem.graph import DEPTH_MAX, WHOLE_GRAPH_LIMIT, graph_around, graph_whole
from gem.models import (
    AmbientProse,
    Fragment,
    FragmentEdge,
    FragmentSource,
    Identity,
    IngestRecord,
    MiraEntry,
    State,
    WakeText,
    WorkingMemory,
    WorkingMemoryRef,
    WorkingMemorySource,
    source_events,
)
from gem.selectors import (
    ambient_prose_check,
    ambient_prose_current,
    gem_current,
    newest_version,
    wake_text_current,
    working_memory_scored,
)
from gem.services import (
    TIERS,
    ReshapeError,
    WorkingMemoryError,
    fragment_fold,
    fragment_fold_preview,
    fragment_rename,
    fragment_rename_preview,
    working_memory_create,
    working_memory_status_set,
    working_memory_twin_review,
    working_memory_update,
)
from gem.state import ARCHIVE_WARNING, CHARS_PER_TOKEN, state_get, turn_counter_current
from gem.textdiff import text_change_summary, text_diff_html
from silentstar.admin import ReadOnlyAdmin
from silentstar.tokens import DEFAULT_CHARS_PER_TOKEN, estimate_tokens


def _page(model_admin, request, template: str, title: str, **context) -> TemplateResponse:
    """An Anvil page inside the admin's frame, for ``model_admin``'s model."""
    return TemplateResponse(
        request,
        template,
        {
            **model_admin.admin_site.each_context(request),
            "opts": model_admin.model._meta,
            "title": title,
            **context,
        },
    )


# --- Fragments ----------------------------------------------------------------------------


class EdgeOutInline(admin.TabularInline):
    model = FragmentEdge
    fk_name = "source"
    extra = 0
    autocomplete_fields = ["target"]
    fields = ["relation", "target"]
    verbose_name = "edge to"
    verbose_name_plural = "edges to other fragments"


class EdgeInInline(admin.TabularInline):
    model = FragmentEdge
    fk_name = "target"
    extra = 0
    autocomplete_fields = ["source"]
    fields = ["source", "relation"]
    verbose_name = "edge from"
    verbose_name_plural = "edges from other fragments"


EXCERPT_CHARS = 120


def _event_line(event_id: int, event) -> str:
    """One source event as the Anvil lists it: its id (a link), time, speaker and an excerpt;
    ``event`` is None when the event log does not have it."""
    url = reverse("admin:heart_event_change", args=[event_id])
    if event is None:
        return format_html('<a href="{}">#{}</a> (not in the event log)', url, event_id)
    return format_html(
        '<a href="{}">#{}</a> <span class="anvil-event-meta">{} {}</span> {}',
        url,
        event_id,
        event.ts.strftime("%Y-%m-%d %H:%M"),
        event.actor or "—",
        Truncator(" ".join(event.content.split())).chars(EXCERPT_CHARS),
    )


class FragmentSourceInline(admin.TabularInline):
    """The events a fragment came from (added by hand, by a draft, kept by a rename or fold),
    each shown as it is in the event log."""

    model = FragmentSource
    extra = 0
    fields = ["event_id", "event"]
    readonly_fields = ["event"]

    @admin.display(description="event")
    def event(self, source):
        if source.pk is None:
            return "—"
        # An inline is made anew for each request: the page's events are read once, together.
        if not hasattr(self, "_events"):
            ids = FragmentSource.objects.filter(fragment=source.fragment_id).values_list(
                "event_id", flat=True
            )
            self._events = source_events(ids)
        return _event_line(source.event_id, self._events.get(source.event_id))


class HasInventoryFilter(admin.SimpleListFilter):
    title = "inventory"
    parameter_name = "inventory"

    def lookups(self, request, model_admin):
        return [("yes", "has inventory"), ("no", "no inventory")]

    def queryset(self, request, queryset):
        empty = Q(inventory="")
        if self.value() == "yes":
            return queryset.exclude(empty)
        if self.value() == "no":
            return queryset.filter(empty)
        return queryset


class OrphanFilter(admin.SimpleListFilter):
    title = "edges"
    parameter_name = "edges"

    def lookups(self, request, model_admin):
        return [("none", "orphan (no edges)"), ("some", "connected")]

    def queryset(self, request, queryset):
        connected = Exists(FragmentEdge.objects.filter(source=OuterRef("pk"))) | Exists(
            FragmentEdge.objects.filter(target=OuterRef("pk"))
        )
        if self.value() == "none":
            return queryset.exclude(connected)
        if self.value() == "some":
            return queryset.filter(connected)
        return queryset


class RecentlyChangedFilter(admin.DateFieldListFilter):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.title = "recently changed"


def _chars_per_token() -> float:
    return state_get(CHARS_PER_TOKEN, DEFAULT_CHARS_PER_TOKEN)


@admin.register(Fragment)
class FragmentAdmin(admin.ModelAdmin):
    list_display = ["key", "ambient_excerpt", "has_inventory", "updated_at"]
    list_filter = [
        HasInventoryFilter,
        OrphanFilter,
        ("updated_at", RecentlyChangedFilter),
    ]
    search_fields = ["key", "ambient", "recognition", "inventory"]
    fields = ["key", "ambient", "recognition", "inventory", "token_estimates"]
    readonly_fields = ["token_estimates"]
    inlines = [EdgeOutInline, EdgeInInline, FragmentSourceInline]

    def get_readonly_fields(self, request, obj=None):
        # A key changes only through the rename page, where everything that names it follows.
        return [*self.readonly_fields, "key"] if obj else self.readonly_fields

    @admin.display(description="ambient")
    def ambient_excerpt(self, fragment):
        return fragment.ambient[:100]

    @admin.display(boolean=True, description="inventory")
    def has_inventory(self, fragment):
        return bool(fragment.inventory.strip())

    @admin.display(description="token estimates")
    def token_estimates(self, fragment):
        cpt = _chars_per_token()
        counts = ", ".join(
            f"{tier} {estimate_tokens(getattr(fragment, tier), cpt)}" for tier in TIERS
        )
        return f"{counts} (saved text, at {cpt:.2f} characters per token)"

    def render_change_form(self, request, context, *args, **kwargs):
        context["chars_per_token"] = _chars_per_token()
        return super().render_change_form(request, context, *args, **kwargs)

    def get_urls(self):
        view = self.admin_site.admin_view
        return [
            path("graph/", view(self.graph_view), name="gem_fragment_graph"),
            path("draft/", view(self.draft_view), name="gem_fragment_draft"),
            path("<path:key>/rename/", view(self.rename_view), name="gem_fragment_rename"),
            path("<path:key>/fold/", view(self.fold_view), name="gem_fragment_fold"),
            *super().get_urls(),
        ]

    def _reshape_allowed(self, request, fragment) -> None:
        if not (
            self.has_change_permission(request, fragment)
            and self.has_delete_permission(request, fragment)
        ):
            raise PermissionDenied

    def rename_view(self, request, key):
        key = unquote(key)
        fragment = get_object_or_404(Fragment, key=key)
        self._reshape_allowed(request, fragment)
        form = RenameForm(request.POST or None)
        plan = None
        if request.method == "POST" and form.is_valid():
            new_key = form.cleaned_data["new_key"]
            try:
                if "confirm" in request.POST:
                    renamed = fragment_rename(old_key=key, new_key=new_key, user_id=request.user.pk)
                    self.message_user(request, f"Renamed “{key}” to “{renamed.key}”.")
                    return HttpResponseRedirect(
                        reverse("admin:gem_fragment_change", args=[quote(renamed.key)])
                    )
                plan = fragment_rename_preview(old_key=key, new_key=new_key)
            except ReshapeError as error:
                form.add_error("new_key", str(error))
        return _page(
            self,
            request,
            "admin/gem/fragment/rename.html",
            f"Rename “{key}”",
            original=fragment,
            form=form,
            plan=plan,
        )

    def fold_view(self, request, key):
        key = unquote(key)
        fragment = get_object_or_404(Fragment, key=key)
        self._reshape_allowed(request, fragment)
        form = FoldForm(request.POST or None)
        plan = diffs = None
        if request.method == "POST" and form.is_valid():
            into = form.cleaned_data["into"]
            try:
                if "confirm" in request.POST:
                    done = fragment_fold(source_key=key, into_key=into, user_id=request.user.pk)
                    self.message_user(
                        request,
                        f"Folded “{key}” into “{into}”: {len(done.edges_moved)} edge(s) moved, "
                        f"{len(done.edges_merged)} merged with their labels kept.",
                    )
                    url = reverse("admin:gem_fragment_change", args=[quote(into)])
                    return HttpResponseRedirect(url)
                plan = fragment_fold_preview(source_key=key, into_key=into)
            except ReshapeError as error:
                form.add_error("into", str(error))
        if plan:
            kept = Fragment.objects.get(key=plan.into)
            diffs = [
                (
                    tier,
                    text_diff_html(
                        getattr(kept, tier),
                        plan.tiers[tier],
                        old_label=f"{plan.into} now",
                        new_label=f"{plan.into} after the fold",
                    ),
                )
                for tier in TIERS
                if getattr(kept, tier) != plan.tiers[tier]
            ]
        return _page(
            self,
            request,
            "admin/gem/fragment/fold.html",
            f"Fold “{key}” into another fragment",
            original=fragment,
            form=form,
            plan=plan,
            diffs=diffs,
        )

    def graph_view(self, request):
        if not self.has_view_permission(request):
            raise PermissionDenied
        form = GraphForm(request.GET or None)
        key = depth = None
        if form.is_valid():
            key = form.cleaned_data["key"].strip()
            depth = form.cleaned_data["depth"] or 1
        graph = graph_around(key, depth=depth) if key else graph_whole()
        elements = None
        if graph is not None:
            elements = {
                "nodes": [
                    {
                        "data": {
                            "id": k,
                            "url": reverse("admin:gem_fragment_change", args=[quote(k)]),
                            "focus": k == key,
                        }
                    }
                    for k in graph.keys
                ],
                "edges": [
                    {"data": {"id": f"{s}→{t}", "source": s, "target": t, "label": relation}}
                    for s, t, relation in graph.edges
                ],
            }
        return _page(
            self,
            request,
            "admin/gem/fragment/graph.html",
            f"Fragment graph around “{key}”" if key else "Fragment graph",
            form=form,
            graph=graph,
            elements=elements,
            focus=key,
            whole_limit=WHOLE_GRAPH_LIMIT,
            depth_max=DEPTH_MAX,
        )

    def draft_view(self, request):
        """Apply a Lens draft: paste or upload it, read what it would change, confirm."""
        if not (self.has_add_permission(request) and self.has_change_permission(request)):
            raise PermissionDenied
        form = DraftForm(request.POST or None, request.FILES or None)
        diff = None
        if request.method == "POST" and form.is_valid():
            text = form.cleaned_data["text"]
            try:
                if "confirm" in request.POST:
                    done = draft_apply(text, user=request.user)
                    self.message_user(request, _draft_done(done))
                    return HttpResponseRedirect(reverse("admin:gem_fragment_changelist"))
                diff = draft_diff(draft_parse(text))
            except DraftError as error:
                form.add_error(None, str(error))
                diff = None
        return _page(
            self,
            request,
            "admin/gem/fragment/draft.html",
            "Apply a Lens draft",
            form=form,
            diff=diff,
            fragments=_draft_fragments(diff) if diff else [],
            text=form.cleaned_data.get("text", "") if diff else "",
        )


def _draft_fragments(diff: DraftDiff) -> list[dict]:
    """The preview of a draft, fragment by fragment: created or changed, each tier's text
    before and after."""
    created = set(diff.fragments_created)
    return [
        {
            "key": key,
            "created": key in created,
            "sources": diff.sources_of(key),
            "tiers": [
                (
                    change.tier,
                    text_diff_html(
                        change.old, change.new, old_label="now", new_label="in the draft"
                    ),
                )
                for change in diff.tiers_changed
                if change.key == key
            ],
        }
        for key in [*diff.fragments_created, *diff.fragments_changed()]
    ]


def _draft_done(diff: DraftDiff) -> str:
    if diff.is_empty:
        return "Nothing changed: the Gem already holds this draft."
    changed = diff.fragments_changed()
    return (
        f"Applied the draft: {len(diff.fragments_created)} fragment(s) created, "
        f"{len(changed)} changed, {len(diff.edges_added)} edge(s) added, "
        f"{len(diff.edges_removed)} removed, {len(diff.edges_relabelled)} relabelled, "
        f"{len(diff.sources_added)} source(s) recorded."
    )


@admin.register(FragmentEdge)
class FragmentEdgeAdmin(admin.ModelAdmin):
    list_display = ["source", "relation", "target"]
    list_filter = ["relation"]
    search_fields = ["source__key", "target__key", "relation"]
    autocomplete_fields = ["source", "target"]


@admin.register(FragmentSource)
class FragmentSourceAdmin(admin.ModelAdmin):
    list_display = ["fragment", "event_id"]
    search_fields = ["fragment__key"]
    autocomplete_fields = ["fragment"]


# --- Working memory -----------------------------------------------------------------------


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
    list_display = [
        "id",
        "type",
        "content_excerpt",
        "twin",
        "subject",
        "status",
        "live_score",
        "importance",
        "valence",
        "actor",
        "due",
    ]
    list_filter = [NearDuplicateFilter, "type", "status", "actor", "refreshed_at"]
    list_select_related = ["near_duplicate_of"]
    search_fields = ["content", "subject"]
    date_hierarchy = "created_at"
    inlines = [WorkingMemoryRefInline]
    actions = ["status_change"]
    form = WorkingMemoryForm
    add_fields = ["type", "content", "subject", "due", "importance", "valence"]
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
                importance=importance,
                valence=valence,
            ).item.pk
        obj.refresh_from_db()

    def log_change(self, request, obj, message):
        """An edit is written in the admin log by ``working_memory_update``, with what its rules
        did; the admin's own entry would say it twice."""

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
        return item.content[:100]

    @admin.display(description="near duplicate")
    def twin(self, item):
        return "—" if item.near_duplicate_of_id is None else _twin_link(item)

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        # A flagged item's page opens on it beside its twin, with the decision to make.
        if obj is not None and obj.near_duplicate_of_id is not None:
            context["twin"] = obj.near_duplicate_of
            context["twin_form"] = TwinReviewForm()
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
        events = source_events(ids)
        lines = format_html_join("", "<li>{}</li>", ((_event_line(i, events.get(i)),) for i in ids))
        return format_html('<ol class="anvil-events">{}</ol>', lines)

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
                    f"{len(changed)} item(s) now {form.cleaned_data['status']}; "
                    "the reason is in each item's history.",
                )
                return None
        return _page(
            self,
            request,
            "admin/gem/workingmemory/status.html",
            "Change the status of working memory",
            form=form,
            items=queryset,
            action_checkbox_name=admin.helpers.ACTION_CHECKBOX_NAME,
        )


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


# --- Ambient prose and wake texts: versions -----------------------------------------------


class VersionedTextAdmin(admin.ModelAdmin):
    """A text kept as versions: every save adds a version, none is changed or removed, and any
    two can be compared. A version's page is the form of a new version that starts from it;
    saving it makes that the newest (so an old version comes back by saving its page)."""

    actions = ["versions_compare"]
    formfield_overrides = {
        models.TextField: {"widget": forms.Textarea(attrs={"rows": 20, "cols": 100})}
    }
    version_fields: tuple[str, ...] = ("content",)  # what a person writes in a version

    def get_fields(self, request, obj=None):
        return list(self.version_fields) if obj is None else self.version_page_fields()

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return []
        return [name for name in self.version_page_fields() if name not in self.version_fields]

    def version_page_fields(self) -> list[str]:
        return [*self.version_fields, "author", "created_at"]

    def render_change_form(self, request, context, *args, **kwargs):
        # One save button: a second version straight after the first is the same text again.
        context["show_save_and_add_another"] = False
        context["show_save_and_continue"] = False
        context["show_delete_link"] = False
        return super().render_change_form(request, context, *args, **kwargs)

    def has_delete_permission(self, request, obj=None):
        return False

    def author_of(self, request):
        """What the ``author`` field of a new version holds: the account."""
        return request.user

    def save_model(self, request, obj, form, change):
        # Always a new version: the one the form was opened on stays as it was.
        obj.pk = None
        obj._state.adding = True
        obj.created_at = timezone.now()
        obj.author = self.author_of(request)
        super().save_model(request, obj, form, change=False)

    def response_change(self, request, obj):
        self.message_user(request, f"Saved as a new version: {obj}.")
        return HttpResponseRedirect(
            reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_changelist")
        )

    def newest(self, version):
        """The newest version of the same text as ``version``."""
        return newest_version(self.model, self.same_text(version))

    @admin.display(boolean=True, description="in use")
    def is_current(self, version):
        return self.newest(version) == version

    @admin.display(description="content")
    def excerpt(self, version):
        return version.content[:120]

    @admin.display(description="compare")
    def compare_previous(self, version):
        url = reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_diff")
        return format_html('<a href="{}?new={}">with the one before</a>', url, version.pk)

    def same_text(self, version) -> Q:
        """The versions of the same text as ``version``."""
        return Q()

    def version_before(self, version):
        """The version ``version`` replaced, or None for the first."""
        return (
            self.model.objects.filter(self.same_text(version))
            .filter(
                Q(created_at__lt=version.created_at)
                | Q(created_at=version.created_at, pk__lt=version.pk)
            )
            .order_by("-created_at", "-pk")
            .first()
        )

    def construct_change_message(self, request, form, formsets, add=False):
        # Called once the new version is saved: it is compared with the one it replaced.
        version = form.instance
        before = self.version_before(version)
        changes = text_change_summary(before.content if before else "", version.content)
        return f"New version: {changes}"

    def get_urls(self):
        name = f"{self.opts.app_label}_{self.opts.model_name}_diff"
        return [
            path("diff/", self.admin_site.admin_view(self.diff_view), name=name),
            *super().get_urls(),
        ]

    @admin.action(description="Compare the two selected versions")
    def versions_compare(self, request, queryset):
        if queryset.count() != 2:
            self.message_user(request, "Select exactly two versions to compare.", messages.ERROR)
            return None
        old, new = queryset.order_by("created_at", "pk")
        url = reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_diff")
        return HttpResponseRedirect(f"{url}?old={old.pk}&new={new.pk}")

    def diff_view(self, request):
        """Two versions side by side: ``?old=&new=`` ids, or ``?new=`` alone for the version
        it replaced."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        try:
            new = get_object_or_404(self.model, pk=int(request.GET["new"]))
            old_id = request.GET.get("old")
            old = get_object_or_404(self.model, pk=int(old_id)) if old_id else None
        except (KeyError, ValueError):
            self.message_user(
                request, "Say which versions to compare: ?old=ID&new=ID.", messages.ERROR
            )
            return HttpResponseRedirect(
                reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_changelist")
            )
        old = old or self.version_before(new)
        old_text, old_label = (old.content, str(old)) if old else ("", "(nothing before)")
        return _page(
            self,
            request,
            "admin/gem/version_diff.html",
            f"Compare {self.opts.verbose_name}s",
            old=old,
            new=new,
            diff=text_diff_html(old_text, new.content, old_label=old_label, new_label=str(new)),
            summary=text_change_summary(old_text, new.content),
        )


@admin.register(AmbientProse)
class AmbientProseAdmin(VersionedTextAdmin):
    list_display = ["created_at", "author", "is_current", "excerpt", "compare_previous"]
    list_filter = ["created_at", "author"]
    search_fields = ["content"]

    def version_page_fields(self) -> list[str]:
        return ["content", "key_check", "author", "created_at"]

    def get_changeform_initial_data(self, request):
        return {"content": ambient_prose_current()}

    @admin.display(description="keys")
    def key_check(self, version):
        return _key_check_text(ambient_prose_check(version.content))

    def add_view(self, request, form_url="", extra_context=None):
        extra_context = {**(extra_context or {}), "check": ambient_prose_check()}
        return super().add_view(request, form_url, extra_context)

    def response_add(self, request, obj, post_url_continue=None):
        check = _key_check_text(ambient_prose_check(obj.content))
        self.message_user(request, f"Saved as the new ambient prose. {check}")
        return super().response_add(request, obj, post_url_continue)


def _key_check_text(check) -> str:
    missing = ", ".join(f"[{key}]" for key in check.missing) or "none"
    unmentioned = ", ".join(check.unmentioned) or "none"
    return f"Named without a fragment: {missing}. Fragments never mentioned: {unmentioned}."


@admin.register(WakeText)
class WakeTextAdmin(VersionedTextAdmin):
    list_display = ["kind", "created_at", "author", "is_current", "excerpt", "compare_previous"]
    list_filter = ["kind", "created_at"]
    search_fields = ["content"]
    version_fields = ("kind", "content")

    def same_text(self, version) -> Q:
        return Q(kind=version.kind)

    def get_changeform_initial_data(self, request):
        kind = request.GET.get("kind", "wake")
        return {"kind": kind, "content": wake_text_current(kind)}


# --- The rest -----------------------------------------------------------------------------


@admin.register(Identity)
class IdentityAdmin(admin.ModelAdmin):
    list_display = ["name", "side", "color"]
    list_filter = ["side"]
    search_fields = ["name"]


@admin.register(State)
class StateAdmin(admin.ModelAdmin):
    list_display = ["key", "value_excerpt", "updated_at"]
    search_fields = ["key", "value"]

    @admin.display(description="value")
    def value_excerpt(self, state):
        return state.value[:120]


@admin.register(IngestRecord)
class IngestRecordAdmin(admin.ModelAdmin):
    list_display = ["event_id", "ingested_at", "changes"]
    list_filter = ["ingested_at"]
    search_fields = ["event_id"]

    def has_change_permission(self, request, obj=None):
        return False
