from django.apps import AppConfig
from django.contrib.admin import apps as admin_apps


class AnvilConfig(AppConfig):
    default = True
    name = "anvil"
    verbose_name = "Anvil — curation by a person"


class AnvilAdminConfig(admin_apps.AdminConfig):
    """Django's admin with the Anvil's site as the default one (named in INSTALLED_APPS)."""

    default = False
    default_site = "anvil.site.AnvilSite"
