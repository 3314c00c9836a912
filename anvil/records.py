"""The Gem's small records in the Anvil: identities, state and the ingest records."""

from django import forms
from django.contrib import admin

from gem.models import (
    Identity,
    IngestRecord,
    State,
)
from gem.services import IdentityRow, identities_check, identities_set


def identity_rows(
    *, but: int | None = None, adding: IdentityRow | None = None
) -> list[IdentityRow]:
    """Today's identities as rows for ``identities_set``, without the one whose id is ``but``,
    with ``adding`` in its place (or after the others when it is new)."""
    rows = [
        IdentityRow(name=identity.name, side=identity.side, color=identity.color, id=identity.pk)
        for identity in Identity.objects.order_by("id")
        if identity.pk != but
    ]
    if adding is None:
        return rows
    if adding.id is None:
        return [*rows, adding]
    return [adding if row.id == adding.id else row for row in rows]


class IdentityForm(forms.ModelForm):
    """An identity's name, side and colour, checked with every other identity by the Gem's own
    rules, so the Anvil refuses in the same words as the set-up."""

    class Meta:
        model = Identity
        fields = ["name", "side", "color"]

    def clean(self):
        cleaned = super().clean()
        if not self.errors:
            identities_check(identity_rows(adding=self.as_row()))
        return cleaned

    def as_row(self) -> IdentityRow:
        data = self.cleaned_data
        return IdentityRow(data["name"], data["side"], data["color"], self.instance.pk)


@admin.register(Identity)
class IdentityAdmin(admin.ModelAdmin):
    """Every change goes through ``identities_set``, as the set-up's do; an identity is deleted
    one at a time, and never the last of its side."""

    form = IdentityForm
    list_display = ["name", "side", "color"]
    list_filter = ["side"]
    search_fields = ["name"]
    actions = None

    def save_model(self, request, obj, form, change):
        row = form.as_row()
        written = identities_set(identities=identity_rows(adding=row))
        obj.pk = row.id or next(identity.pk for identity in written if identity.name == row.name)

    def delete_model(self, request, obj):
        identities_set(identities=identity_rows(but=obj.pk))

    def has_delete_permission(self, request, obj=None):
        if obj is not None and not Identity.objects.filter(side=obj.side).exclude(pk=obj.pk):
            return False
        return super().has_delete_permission(request, obj)


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
