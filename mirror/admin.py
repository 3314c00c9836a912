"""The Mirror's output in the admin: summaries, the suggestion queue, runs."""

from django.contrib import admin

from mirror.models import MirrorRun, Summary, TagSuggestion


class TagSuggestionInline(admin.TabularInline):
    model = TagSuggestion
    extra = 0
    fields = ["type", "content", "subject", "status", "promoted_wm_id"]


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
    ]
    list_filter = ["level", "created_at"]
    search_fields = ["content"]
    inlines = [TagSuggestionInline]
    raw_id_fields = ["superseded_by"]

    @admin.display(boolean=True, description="current")
    def is_current(self, summary):
        return summary.superseded_by_id is None


@admin.register(TagSuggestion)
class TagSuggestionAdmin(admin.ModelAdmin):
    list_display = ["id", "type", "content_excerpt", "subject", "status", "created_at"]
    list_filter = ["status", "type", "created_at"]
    search_fields = ["content", "subject"]
    raw_id_fields = ["summary"]

    @admin.display(description="content")
    def content_excerpt(self, suggestion):
        return suggestion.content[:100]


@admin.register(MirrorRun)
class MirrorRunAdmin(admin.ModelAdmin):
    list_display = ["id", "kind", "route", "started_at", "completed_at", "short_error"]
    list_filter = ["kind", "route", "started_at"]
    search_fields = ["error"]

    @admin.display(description="error")
    def short_error(self, run):
        return run.error[:80]
