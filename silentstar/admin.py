"""What the apps' admins share."""

from django.contrib import admin


class ReadOnlyAdmin(admin.ModelAdmin):
    """For records nobody edits by hand: the log, turns, snapshots, where items came from."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
