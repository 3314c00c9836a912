"""The devices that receive a notification when she writes first, and what was sent to each, in
the Anvil: read-only; a device is removed here as on the notifications page
(``heart.push.subscription_remove``)."""

from django.contrib import admin

from heart.models import PushDelivery, PushSubscription
from heart.push import subscription_remove
from silentstar.admin import ReadOnlyAdmin


@admin.register(PushSubscription)
class PushSubscriptionAdmin(ReadOnlyAdmin):
    list_display = ["device", "show_words", "created_at", "last_sent_at", "failures"]
    list_filter = ["show_words", "created_at"]
    search_fields = ["device"]
    # The endpoint and the keys are the device's secrets: not shown.
    fields = ["device", "show_words", "created_at", "last_sent_at", "failures"]
    actions = None

    def has_delete_permission(self, request, obj=None):
        return request.user.has_perm("heart.delete_pushsubscription")

    def delete_model(self, request, obj):
        subscription_remove(endpoint=obj.endpoint)


@admin.register(PushDelivery)
class PushDeliveryAdmin(ReadOnlyAdmin):
    list_display = ["ref", "subscription", "status", "attempts", "created_at", "sent_at", "error"]
    list_filter = ["status", "created_at"]
    search_fields = ["ref", "error"]
    list_select_related = ["subscription"]
