"""The Anvil's admin site: Django's own, behind the memory permission (``gem/access.py``).

Every admin page goes through ``admin_view``; wrapping it there refuses a signed-in account
without the permission with 403, even a staff one, before the admin's own checks (staff status,
then each model's permissions) would send it to the sign-in page or show it an empty index.
"""

from django.contrib import admin

from gem.access import memory_access_required


class AnvilSite(admin.AdminSite):
    site_header = "Silentstar — the Anvil"
    site_title = "Silentstar Anvil"
    index_title = "Curation"

    def admin_view(self, view, cacheable=False):
        return memory_access_required(super().admin_view(view, cacheable))
