"""The Mirror's output in the admin: summaries, the suggestion queue, runs."""

from django.contrib import admin
from django.utils import timezone

from mirror.models import MirrorPrompt, MirrorRun, Summary, TagSuggestion


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


@admin.register(MirrorPrompt)
class MirrorPromptAdmin(admin.ModelAdmin):
    """The pass prompts, versioned: saving always adds a version; the newest of a kind is used."""

    list_display = ["kind", "created_at", "author", "is_current", "excerpt"]
    list_filter = ["kind", "created_at"]
    search_fields = ["content"]
    fields = ["kind", "content"]

    def save_model(self, request, obj, form, change):
        obj.pk = None
        obj._state.adding = True
        obj.created_at = timezone.now()
        obj.author = request.user.get_username()
        super().save_model(request, obj, form, change=False)

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(boolean=True, description="in use")
    def is_current(self, prompt):
        newest = MirrorPrompt.objects.filter(kind=prompt.kind).order_by("-created_at", "-id")
        return newest.values_list("pk", flat=True).first() == prompt.pk

    @admin.display(description="content")
    def excerpt(self, prompt):
        return prompt.content[:120]
