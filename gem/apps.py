from django.apps import AppConfig


class GemConfig(AppConfig):
    name = "gem"
    verbose_name = "Gem — knowledge"
