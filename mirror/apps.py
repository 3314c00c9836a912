from django.apps import AppConfig


class MirrorConfig(AppConfig):
    name = "mirror"
    verbose_name = "Mirror — summaries and suggestions"
