from django.apps import AppConfig


class AnvilConfig(AppConfig):
    name = "anvil"
    verbose_name = "Anvil — curation by a person"
