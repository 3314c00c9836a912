"""The Gem's small records in the Anvil: identities, state and the ingest records."""

from django.contrib import admin

from gem.models import (
    Identity,
    IngestRecord,
    State,
)


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
