"""The Anvil's first surface: every Gem model in the admin, listed, filtered and searchable."""

from django.contrib import admin

from gem.models import (
    AmbientProse,
    Fragment,
    FragmentEdge,
    FragmentSource,
    Identity,
    IngestRecord,
    State,
    WakeText,
    WorkingMemory,
    WorkingMemoryRef,
)


class EdgeOutInline(admin.TabularInline):
    model = FragmentEdge
    fk_name = "source"
    extra = 0
    autocomplete_fields = ["target"]
    verbose_name = "edge to"
    verbose_name_plural = "edges to other fragments"


class FragmentSourceInline(admin.TabularInline):
    model = FragmentSource
    extra = 0


@admin.register(Fragment)
class FragmentAdmin(admin.ModelAdmin):
    list_display = ["key", "ambient_excerpt", "has_inventory", "updated_at"]
    list_filter = ["updated_at", "created_at"]
    search_fields = ["key", "ambient", "recognition", "inventory"]
    inlines = [EdgeOutInline, FragmentSourceInline]

    @admin.display(description="ambient")
    def ambient_excerpt(self, fragment):
        return fragment.ambient[:100]

    @admin.display(boolean=True, description="inventory")
    def has_inventory(self, fragment):
        return bool(fragment.inventory.strip())


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


class WorkingMemoryRefInline(admin.TabularInline):
    model = WorkingMemoryRef
    extra = 0
    autocomplete_fields = ["fragment"]


@admin.register(WorkingMemory)
class WorkingMemoryAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "type",
        "content_excerpt",
        "subject",
        "status",
        "actor",
        "due",
        "refreshed_at",
    ]
    list_filter = ["type", "status", "actor", "refreshed_at"]
    search_fields = ["content", "subject"]
    date_hierarchy = "created_at"
    inlines = [WorkingMemoryRefInline]

    @admin.display(description="content")
    def content_excerpt(self, item):
        return item.content[:100]


@admin.register(WorkingMemoryRef)
class WorkingMemoryRefAdmin(admin.ModelAdmin):
    list_display = ["wm", "fragment"]
    search_fields = ["fragment__key", "wm__content"]
    list_select_related = ["wm", "fragment"]
    autocomplete_fields = ["fragment"]
    raw_id_fields = ["wm"]


@admin.register(AmbientProse)
class AmbientProseAdmin(admin.ModelAdmin):
    list_display = ["created_at", "author", "excerpt"]
    list_filter = ["created_at", "author"]
    search_fields = ["content"]

    @admin.display(description="content")
    def excerpt(self, prose):
        return prose.content[:120]


@admin.register(WakeText)
class WakeTextAdmin(admin.ModelAdmin):
    list_display = ["kind", "created_at", "author", "excerpt"]
    list_filter = ["kind", "created_at"]
    search_fields = ["content"]

    @admin.display(description="content")
    def excerpt(self, text):
        return text.content[:120]


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
