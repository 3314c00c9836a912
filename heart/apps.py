from django.apps import AppConfig


class HeartConfig(AppConfig):
    name = "heart"
    verbose_name = "Heart — the live conversation"
