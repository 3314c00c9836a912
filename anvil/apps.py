from django.apps import AppConfig
from django.contrib import admin
from django.contrib.admin import apps as admin_apps
from django.contrib.admin.checks import check_admin_app, check_dependencies
from django.core import checks


class AnvilConfig(AppConfig):
    default = True
    name = "anvil"
    verbose_name = "Anvil — curation by a person"


class AnvilAdminConfig(admin_apps.SimpleAdminConfig):
    """Django's admin with the Anvil's site as the default one (named in INSTALLED_APPS).

    The Anvil's pages are registered when the URLs are first read (``silentstar/urls.py`` calls
    ``admin.autodiscover()``), not when Django starts: a ``manage.py`` command, or the worker,
    that serves no page starts without importing them and the services they show, a third of
    each process's start. The admin's system checks register them first, so that they check
    every page whichever check runs first."""

    default = False
    default_site = "anvil.site.AnvilSite"

    def ready(self):
        checks.register(check_dependencies, checks.Tags.admin)
        checks.register(pages_checked, checks.Tags.admin)


def pages_checked(app_configs, **kwargs) -> list[checks.CheckMessage]:
    """Django's checks of the admin's pages, once every app's pages are registered."""
    admin.autodiscover()
    return check_admin_app(app_configs, **kwargs)
