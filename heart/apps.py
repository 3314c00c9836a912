from django.apps import AppConfig


class HeartConfig(AppConfig):
    name = "heart"
    verbose_name = "Heart — the live conversation"

    def ready(self):
        from silentstar import checks  # noqa: F401  (registers the project's system checks)
