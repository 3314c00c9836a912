from django.apps import AppConfig
from django.contrib.admin import apps as admin_apps


class AnvilConfig(AppConfig):
    name = "anvil"
    verbose_name = "Anvil — curation by a person"
    default = True


class AnvilAdminConfig(admin_apps.AdminConfig):
    """Django's admin, with the Anvil's site as ``admin.site`` (see ``anvil/site.py``)."""

    default = False
    default_site = "anvil.site.AnvilSite"
