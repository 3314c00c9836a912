"""The event log, the turns and the context snapshots in the Anvil: readable, searchable, never
editable."""

from django.contrib import admin

from events.models import Event, EventTag, Turn
from heart.models import ContextSnapshot
from silentstar.admin import ReadOnlyAdmin


class EventTagInline(admin.TabularInline):
    model = EventTag
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(Event)
class EventAdmin(ReadOnlyAdmin):
    list_display = ["id", "ts", "actor", "excerpt", "has_image"]
    list_filter = ["actor", "ts", "tags__tag"]
    search_fields = ["content", "actor"]
    date_hierarchy = "ts"
    inlines = [EventTagInline]

    @admin.display(description="content")
    def excerpt(self, event):
        return event.content[:120]

    @admin.display(boolean=True, description="image")
    def has_image(self, event):
        return bool(event.image)


@admin.register(EventTag)
class EventTagAdmin(ReadOnlyAdmin):
    list_display = ["tag", "event", "event_actor"]
    list_filter = ["tag"]
    search_fields = ["tag", "event__content"]
    list_select_related = ["event"]

    @admin.display(description="actor")
    def event_actor(self, tag):
        return tag.event.actor


@admin.register(Turn)
class TurnAdmin(ReadOnlyAdmin):
    list_display = [
        "number",
        "status",
        "queued_at",
        "attempts",
        "model",
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "short_error",
    ]
    list_filter = ["status", "model", "queued_at"]
    search_fields = ["error", "event__content", "partial_text"]
    date_hierarchy = "queued_at"
    list_select_related = ["event"]

    @admin.display(description="error")
    def short_error(self, turn):
        return turn.error[:80]


@admin.register(ContextSnapshot)
class ContextSnapshotAdmin(ReadOnlyAdmin):
    list_display = ["id", "turn", "ts", "total_tokens"]
    list_filter = ["ts"]
    search_fields = ["assembled_system", "assembled_user"]
    date_hierarchy = "ts"

    @admin.display(description="tokens")
    def total_tokens(self, snapshot):
        return sum(v for v in snapshot.token_counts.values() if isinstance(v, int))
