from django.apps import AppConfig


class LensConfig(AppConfig):
    name = "lens"
    verbose_name = "Lens — read-only views of the Gem"
