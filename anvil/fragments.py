"""Fragments in the Anvil: the three tiers with edges and sources inline, renaming and folding
with a preview, a Lens draft applied after its preview, and the graph picture."""

from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.db.models import Exists, OuterRef, Q
from django.forms.formsets import DELETION_FIELD_NAME
from django.forms.models import BaseInlineFormSet
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.views.decorators.http import require_POST

from anvil.forms import (
    DraftForm,
    FoldForm,
    FragmentForm,
    GraphForm,
    RenameForm,
    TriggerAddForm,
)
from anvil.graph import DEPTH_MAX, WHOLE_GRAPH_LIMIT, graph_around, graph_whole
from anvil.pages import anvil_page, cut_text, event_line, source_events_shown
from anvil.textdiff import text_diff_html
from events.selectors import source_events
from gem.draft import (
    Draft,
    DraftCheck,
    DraftConflict,
    DraftDiff,
    DraftEdge,
    DraftError,
    EdgeRelabel,
    SourceAdded,
    TierChange,
    draft_check,
    draft_diff,
    draft_parse,
    draft_rebased,
    draft_render,
    draft_written,
    fragments_now,
    triggers_change,
)
from gem.drafts import diff_refusal, diff_write, draft_apply, fragments_delete
from gem.keys import CASE_TWINS
from gem.models import (
    Fragment,
    FragmentEdge,
    FragmentSource,
)
from gem.selectors import AMBIENT_KEY, ambient_prose_current
from gem.services import (
    TIERS,
    ReshapeError,
    fragment_fold,
    fragment_fold_preview,
    fragment_rename,
    fragment_rename_preview,
)
from gem.state import chars_per_token, state_get
from gem.waking import triggers_problem
from silentstar.words import counted


class EdgeFormSet(BaseInlineFormSet):
    """An edge's row names its inputs for a screen reader: a table's column heading is no
    label."""

    def add_fields(self, form, index):
        super().add_fields(form, index)
        other = form.instance.target_id if self.fk.name == "source" else form.instance.source_id
        about = f" ({other})" if other else ""
        form.fields["relation"].widget.attrs["aria-label"] = f"Relation{about}"
        if DELETION_FIELD_NAME in form.fields:
            form.fields[DELETION_FIELD_NAME].widget.attrs["aria-label"] = f"Remove this edge{about}"


class EdgeOutInline(admin.TabularInline):
    model = FragmentEdge
    formset = EdgeFormSet
    fk_name = "source"
    extra = 0
    autocomplete_fields = ["target"]
    fields = ["relation", "target"]
    verbose_name = "edge to a fragment"
    verbose_name_plural = "edges to other fragments"


class EdgeInInline(admin.TabularInline):
    model = FragmentEdge
    formset = EdgeFormSet
    fk_name = "target"
    extra = 0
    autocomplete_fields = ["source"]
    fields = ["source", "relation"]
    verbose_name = "edge from a fragment"
    verbose_name_plural = "edges from other fragments"


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
        return event_line(source.event_id, self._events.get(source.event_id))


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


class ReachFilter(admin.SimpleListFilter):
    """Fragments that wake only when the person says their exact key: the ambient prose never
    names them as ``[key]`` and they have no triggers."""

    title = "reached"
    parameter_name = "reached"

    def lookups(self, request, model_admin):
        return [("key", "only by its exact key")]

    def queryset(self, request, queryset):
        if self.value() == "key":
            return only_by_key(queryset)
        return queryset


def only_by_key(queryset):
    """The fragments of ``queryset`` that only their exact key said in a message reaches."""
    named = AMBIENT_KEY.findall(ambient_prose_current())
    return queryset.filter(triggers=[]).exclude(key__in=named)


class CaseTwinsFilter(admin.SimpleListFilter):
    """The pairs of fragments an upgrade renamed apart because their keys differed only in
    case (``gem.keys.CASE_TWINS``), while both are still here: for a person to fold."""

    title = "case twins"
    parameter_name = "twins"

    def lookups(self, request, model_admin):
        return [("fold", "case twins to fold")] if case_twins() else []

    def queryset(self, request, queryset):
        if self.value() == "fold":
            return queryset.filter(key__in={key for pair in case_twins() for key in pair[:2]})
        return queryset


def case_twins() -> list[tuple[str, str, str]]:
    """``(kept, renamed, was)`` for each pair of case twins still both here."""
    pairs = state_get(CASE_TWINS, [])
    keys = {key for pair in pairs for key in (pair["kept"], pair["renamed"])}
    here = set(Fragment.objects.filter(key__in=keys).values_list("key", flat=True))
    return [
        (pair["kept"], pair["renamed"], pair["was"])
        for pair in pairs
        if {pair["kept"], pair["renamed"]} <= here
    ]


class RecentlyChangedFilter(admin.DateFieldListFilter):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.title = "recently changed"


@admin.register(Fragment)
class FragmentAdmin(admin.ModelAdmin):
    form = FragmentForm
    list_display = ["key", "ambient_excerpt", "triggers_shown", "has_inventory", "updated_at"]
    list_filter = [
        HasInventoryFilter,
        OrphanFilter,
        ReachFilter,
        CaseTwinsFilter,
        ("updated_at", RecentlyChangedFilter),
    ]
    search_fields = ["key", "ambient", "recognition", "inventory"]
    fields = ["key", "ambient", "recognition", "inventory", "triggers"]
    inlines = [EdgeOutInline, EdgeInInline, FragmentSourceInline]

    def get_readonly_fields(self, request, obj=None):
        # A key changes only through the rename page, where everything that names it follows.
        return ["key"] if obj else []

    @admin.display(description="ambient")
    def ambient_excerpt(self, fragment):
        return cut_text(fragment.ambient)

    @admin.display(boolean=True, description="inventory")
    def has_inventory(self, fragment):
        return bool(fragment.inventory.strip())

    @admin.display(description="triggers")
    def triggers_shown(self, fragment):
        return ", ".join(fragment.triggers) or "—"

    # The form and its inlines write through the Gem's one write of fragments, edges and
    # sources (``gem.drafts.diff_write``), as a draft does; Django's admin log says what changed.
    def save_model(self, request, obj, form, change):
        """Nothing yet: the fragment is written with its inlines, in ``save_related``."""

    def save_related(self, request, form, formsets, change):
        fragment = form.instance
        diff = DraftDiff()
        if change:
            diff.tiers_changed = [
                TierChange(fragment.key, tier, form.initial.get(tier, ""), getattr(fragment, tier))
                for tier in TIERS
                if tier in form.changed_data
            ]
        else:
            diff.fragments_created = [fragment.key]
            diff.tiers_changed = [
                TierChange(fragment.key, tier, "", getattr(fragment, tier))
                for tier in TIERS
                if getattr(fragment, tier)
            ]
        if "triggers" in form.changed_data:
            diff.tiers_changed.append(
                triggers_change(fragment.key, form.initial.get("triggers", []), fragment.triggers)
            )
        for formset in formsets:
            formset.save(commit=False)  # what Django's admin log reads, nothing written
            rows_diff(diff, formset.new_objects, formset.changed_objects, formset.deleted_objects)
        diff_write(diff)

    def delete_model(self, request, obj):
        fragments_delete(keys=[obj.pk])
        self._mentions_flagged(request, [obj.pk])

    def delete_queryset(self, request, queryset):
        keys = list(queryset.values_list("pk", flat=True))
        fragments_delete(keys=keys)
        self._mentions_flagged(request, keys)

    def _mentions_flagged(self, request, keys: list[str]) -> None:
        """A fragment forgotten whose ``[key]`` the ambient prose still names: said, for the
        person to write the prose again (it is theirs: nothing rewrites it)."""
        named = set(AMBIENT_KEY.findall(ambient_prose_current()))
        if still := sorted(named & set(keys)):
            self.message_user(
                request,
                "The ambient prose still names "
                + ", ".join(f"[{key}]" for key in still)
                + ": edit it so that she is not told of what is gone.",
                messages.WARNING,
            )

    def render_change_form(self, request, context, *args, obj=None, **kwargs):
        context["chars_per_token"] = chars_per_token()
        context["budget_recall"] = settings.BUDGET_RECALL
        context["tier_max_tokens"] = settings.FRAGMENT_TIER_MAX_TOKENS
        if obj is not None:
            context["only_by_key"] = only_by_key(Fragment.objects.filter(pk=obj.pk)).exists()
            context["trigger_form"] = TriggerAddForm()
        return super().render_change_form(request, context, *args, obj=obj, **kwargs)

    def changelist_view(self, request, extra_context=None):
        return super().changelist_view(
            request, {**(extra_context or {}), "case_twins": case_twins()}
        )

    def get_urls(self):
        view = self.admin_site.admin_view
        return [
            path("graph/", view(self.graph_view), name="gem_fragment_graph"),
            path("draft/", view(self.draft_view), name="gem_fragment_draft"),
            path("<path:key>/rename/", view(self.rename_view), name="gem_fragment_rename"),
            path("<path:key>/fold/", view(self.fold_view), name="gem_fragment_fold"),
            path(
                "<path:key>/trigger/",
                view(require_POST(self.trigger_add_view)),
                name="gem_fragment_trigger_add",
            ),
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
        return anvil_page(
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
        form = FoldForm(request.POST or None, initial={"into": request.GET.get("into", "")})
        plan = diffs = None
        if request.method == "POST" and form.is_valid():
            into = form.cleaned_data["into"]
            try:
                if "confirm" in request.POST:
                    done = fragment_fold(source_key=key, into_key=into, user_id=request.user.pk)
                    self.message_user(
                        request,
                        f"Folded “{key}” into “{into}”: "
                        f"{counted(len(done.edges_moved), 'edge')} moved, "
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
        return anvil_page(
            self,
            request,
            "admin/gem/fragment/fold.html",
            f"Fold “{key}” into another fragment",
            original=fragment,
            form=form,
            plan=plan,
            diffs=diffs,
        )

    def trigger_add_view(self, request, key):
        """Give a fragment one more trigger, written as the form's are (``diff_write``)."""
        key = unquote(key)
        fragment = get_object_or_404(Fragment, key=key)
        if not self.has_change_permission(request, fragment):
            raise PermissionDenied
        form = TriggerAddForm(request.POST)
        page = HttpResponseRedirect(reverse("admin:gem_fragment_change", args=[quote(key)]))
        if not form.is_valid():
            self.message_user(request, "Write the trigger to add.", messages.ERROR)
            return page
        trigger = form.cleaned_data["trigger"].strip()
        triggers = [*fragment.triggers, trigger]
        if problem := triggers_problem(triggers):
            self.message_user(request, problem, messages.ERROR)
            return page
        diff = DraftDiff(tiers_changed=[triggers_change(key, fragment.triggers, triggers)])
        try:
            diff_write(diff)
        except DraftError as error:
            self.message_user(request, str(error), messages.ERROR)
            return page
        self.log_change(request, fragment, f"Added the trigger “{trigger}”")
        self.message_user(request, f"“{key}” now wakes when the person says “{trigger}”.")
        return page

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
        return anvil_page(
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
        diff = check = None
        text = ""
        if request.method == "POST" and form.is_valid():
            text = form.cleaned_data["text"]
            try:
                if "rebase" in request.POST:  # edited against today's text
                    text = draft_rebased(text)
                if "confirm" in request.POST:
                    done = draft_apply(
                        text,
                        user=request.user,
                        events_found=source_events,
                        parts=draft_parts_chosen(request),
                    )
                    self.message_user(request, _draft_done(done))
                    return HttpResponseRedirect(reverse("admin:gem_fragment_changelist"))
                draft = draft_parse(text)
                diff = draft_diff(draft, events_found=source_events)
                check = draft_check(draft)
                if refusal := diff_refusal(diff):
                    form.add_error(None, refusal)
            except DraftConflict as conflict:
                diff = draft_diff(draft_parse(text), events_found=source_events)
                check = conflict.check
            except DraftError as error:
                form.add_error(None, str(error))
                diff = None
        return anvil_page(
            self,
            request,
            "admin/gem/fragment/draft.html",
            "Apply a Lens draft",
            form=form,
            diff=diff,
            fragments=draft_preview_fragments(diff) if diff else [],
            text=text if diff else "",
            **(draft_check_context(check) if diff and check else {}),
        )


def draft_preview_fragments(diff: DraftDiff, *, limit: int | None = None) -> list[dict]:
    """The preview of a draft, fragment by fragment: created or changed, each tier's text
    before and after, the sources it records (each event id with its event, or None: read from
    the event log in one query for them all); the first ``limit`` fragments only, when given."""
    created = set(diff.fragments_created)
    changes: dict[str, list] = {}
    for change in diff.tiers_changed:
        changes.setdefault(change.key, []).append(change)
    sources: dict[str, list[int]] = {}
    for source in diff.sources_added:
        sources.setdefault(source.key, []).append(source.event_id)
    keys = [*diff.fragments_created, *diff.fragments_changed()][:limit]
    events = source_events(event_id for key in keys for event_id in sources.get(key, []))
    return [
        {
            "key": key,
            "created": key in created,
            "sources": source_events_shown(sources.get(key, []), events)["events"],
            "tiers": [
                (
                    change.tier,
                    text_diff_html(
                        change.old, change.new, old_label="now", new_label="in the draft"
                    ),
                )
                for change in changes.get(key, [])
            ],
        }
        for key in keys
    ]


def draft_parts_chosen(request) -> set[str] | None:
    """The parts (``KEY:PART``) a person chose to apply one by one, or None: the whole draft."""
    return set(request.POST.getlist("part")) if "by_parts" in request.POST else None


def draft_check_context(check: DraftCheck) -> dict:
    """What a page shows of a draft's check (``admin/anvil/_draft_check.html``): the fragments
    changed since it was written, part by part, what the draft changes (then → draft) and what
    changed meanwhile (then → now), the conflicts marked; the parts that can be applied one by
    one; today's text of those fragments, to edit the draft beside; the fragments it could not
    check."""
    moved = []
    for key, parts in check.fragments():
        rows = []
        for part in parts:
            row = {"part": part.part, "conflict": part.conflict, "moved": part.moved}
            row["base_known"] = part.base is not None
            if part.base is not None:
                if part.changes:
                    row["draft"] = text_diff_html(
                        part.base, part.draft, old_label="when written", new_label="in the draft"
                    )
                if part.moved:
                    row["meanwhile"] = text_diff_html(
                        part.base, part.now, old_label="when written", new_label="now"
                    )
            elif part.draft is not None:
                row["draft"] = text_diff_html(
                    part.now, part.draft, old_label="now", new_label="in the draft"
                )
            rows.append(row)
        moved.append({"key": key, "parts": rows})
    today = ""
    if moved:
        held = fragments_now(fragment["key"] for fragment in moved).values()
        today = draft_render(draft_written(Draft(fragments=list(held))))
    choices = [
        {"name": part.name, "key": part.key, "part": part.part, "conflict": part.conflict}
        for part in check.parts
        if moved and (part.conflict or part.applies)
    ]
    return {
        "moved": moved,
        "conflicts": bool(check.conflicts),
        # Offered when at least one part can be applied alone.
        "choices": choices if any(not choice["conflict"] for choice in choices) else [],
        "today": today,
        "unchecked": check.unchecked,
    }


def _draft_done(diff: DraftDiff) -> str:
    if diff.is_empty:
        return "Nothing changed: the Gem already holds this draft."
    changed = diff.fragments_changed()
    said = (
        f"Applied the draft: {counted(len(diff.fragments_created), 'fragment')} created, "
        f"{len(changed)} changed, {counted(len(diff.edges_added), 'edge')} added, "
        f"{len(diff.edges_removed)} removed, {len(diff.edges_relabelled)} relabelled, "
        f"{counted(len(diff.sources_added), 'source')} recorded."
    )
    if diff.unchecked:
        said += (
            f" It did not say what it was written against for {', '.join(diff.unchecked)}, "
            "so it could not be checked against changes made since."
        )
    return said


def rows_diff(diff: DraftDiff, new: list, changed: list, deleted: list) -> None:
    """Add to ``diff`` what a form made of edges or sources: ``new`` rows, ``changed`` ones
    (``(row, fields)`` as a formset lists them) and ``deleted`` ones, all not yet written."""
    rows = [*new, *(row for row, _ in changed), *deleted]
    if not rows:
        return
    model = type(rows[0])
    before = model.objects.in_bulk([row.pk for row in rows if row.pk is not None])
    removed = [before[row.pk] for row in deleted if row.pk in before]
    added = list(new)
    for row, _ in changed:
        old = before[row.pk]
        if model is FragmentEdge and (old.source_id, old.target_id) == (
            row.source_id,
            row.target_id,
        ):
            diff.edges_relabelled.append(
                EdgeRelabel(row.source_id, row.target_id, old.relation, row.relation)
            )
        else:
            removed.append(old)
            added.append(row)
    if model is FragmentEdge:
        diff.edges_removed += [DraftEdge(e.source_id, e.target_id, e.relation) for e in removed]
        diff.edges_added += [DraftEdge(e.source_id, e.target_id, e.relation) for e in added]
    else:
        diff.sources_removed += [SourceAdded(s.fragment_id, s.event_id) for s in removed]
        diff.sources_added += [SourceAdded(s.fragment_id, s.event_id) for s in added]


class RowAdmin(admin.ModelAdmin):
    """An edge's or a source's own pages: written through the Gem's one write too."""

    def save_model(self, request, obj, form, change):
        diff = DraftDiff()
        rows_diff(diff, [] if change else [obj], [(obj, form.changed_data)] if change else [], [])
        diff_write(diff)
        # The admin log and the page after it name the row written (a new one when an edge's
        # ends or a source's event changed).
        obj.pk = type(obj).objects.get(**_row_natural_key(obj)).pk

    def delete_model(self, request, obj):
        self.delete_queryset(request, type(obj).objects.filter(pk=obj.pk))

    def delete_queryset(self, request, queryset):
        diff = DraftDiff()
        rows_diff(diff, [], [], list(queryset))
        diff_write(diff)


def _row_natural_key(row) -> dict:
    if isinstance(row, FragmentEdge):
        return {"source_id": row.source_id, "target_id": row.target_id}
    return {"fragment_id": row.fragment_id, "event_id": row.event_id}


@admin.register(FragmentEdge)
class FragmentEdgeAdmin(RowAdmin):
    list_display = ["source", "relation", "target"]
    list_filter = ["relation"]
    search_fields = ["source__key", "target__key", "relation"]
    autocomplete_fields = ["source", "target"]


@admin.register(FragmentSource)
class FragmentSourceAdmin(RowAdmin):
    list_display = ["fragment", "event_id"]
    search_fields = ["fragment__key"]
    autocomplete_fields = ["fragment"]
