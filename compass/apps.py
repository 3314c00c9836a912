from django.apps import AppConfig


class CompassConfig(AppConfig):
    name = "compass"
    verbose_name = "Compass — plans proposed for a person to decide"
