from django.apps import AppConfig


class LoomConfig(AppConfig):
    name = "loom"
    verbose_name = "Loom — facet agents that draft for the Anvil"
