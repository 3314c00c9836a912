"""The event log, its corrections, the turns and the context snapshots in the Anvil: readable,
searchable, never editable here (a message is corrected from the chat, which the event's page
links to)."""

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from events.corrected import DONE
from events.models import Correction, Event, EventTag, Nudge, Turn
from events.selectors import views_of
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


class CorrectionInline(admin.TabularInline):
    """The corrections appended beside the event, oldest first: the event stays as written."""

    model = Correction
    extra = 0
    can_delete = False
    fields = ["made_at", "kind", "text", "actor", "made_by"]
    readonly_fields = fields
    verbose_name_plural = "corrections, oldest first"

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
    inlines = [EventTagInline, CorrectionInline]
    fields = ["ts", "content", "actor", "image_link", "as_corrected"]
    readonly_fields = ["image_link", "as_corrected"]

    @admin.display(description="as corrected")
    def as_corrected(self, event):
        """What readers follow, when corrections changed it, and where to correct it."""
        view = views_of([(event.pk, event.actor, event.content)])[event.pk]
        link = reverse("heart-chat") + f"#event-{event.pk}"
        if not view.corrected:
            return format_html('As written. <a href="{}">Correct it in the chat</a>', link)
        said = [
            DONE[kind]
            for kind, done in (
                ("retraction", view.retracted),
                ("edit", view.edited),
                ("attribution", view.reattributed),
            )
            if done
        ]
        if view.retracted:  # no words: readers see none
            return format_html(
                '{}: {}. <a href="{}">Correct it in the chat</a>',
                ", ".join(said).capitalize(),
                view.actor,
                link,
            )
        return format_html(
            '{}: {} — “{}”. <a href="{}">Correct it in the chat</a>',
            ", ".join(said).capitalize(),
            view.actor,
            view.content[:500],
            link,
        )

    @admin.display(description="content")
    def excerpt(self, event):
        return event.content[:120]

    @admin.display(description="image")
    def image_link(self, event):
        """The image through the chat's own view, which serves it to those who may read the
        memory: uploaded files are never served from ``MEDIA_URL``."""
        if not event.image:
            return None
        url = reverse("heart-image", args=[event.pk])
        return format_html('<a href="{}">{}</a>', url, event.image.name)

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
        "context",
    ]
    list_filter = ["status", "model", "queued_at"]
    search_fields = ["error", "event__content", "partial_text"]
    date_hierarchy = "queued_at"
    list_select_related = ["event"]
    readonly_fields = ["context"]

    @admin.display(description="error")
    def short_error(self, turn):
        return turn.error[:80]

    @admin.display(description="context")
    def context(self, turn):
        return context_link(turn.pk)


@admin.register(Nudge)
class NudgeAdmin(ReadOnlyAdmin):
    """Each reason found for her to write first: sent, waiting (and what holds it), or
    cancelled; turned on and off in the memory drawer."""

    list_display = ["found_at", "reason", "said", "status", "held", "decided_at", "context"]
    list_filter = ["reason", "status", "found_at"]
    search_fields = ["said", "thing"]
    readonly_fields = ["context"]

    @admin.display(description="context")
    def context(self, nudge):
        return context_link(nudge.turn_id) if nudge.turn_id else "—"


@admin.register(ContextSnapshot)
class ContextSnapshotAdmin(ReadOnlyAdmin):
    list_display = ["id", "turn", "ts", "total_tokens", "context"]
    readonly_fields = ["context"]
    list_filter = ["ts"]
    search_fields = ["assembled_system", "assembled_user"]
    date_hierarchy = "ts"

    @admin.display(description="tokens")
    def total_tokens(self, snapshot):
        return sum(v for v in snapshot.token_counts.values() if isinstance(v, int))

    @admin.display(description="context")
    def context(self, snapshot):
        return context_link(snapshot.turn)


def context_link(turn_id: int) -> str:
    """A link to the context inspector of a turn: why she knew what she knew."""
    url = reverse("admin:inspector", args=[turn_id])
    return format_html('<a href="{}">why she knew what she knew</a>', url)
