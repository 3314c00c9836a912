from django.apps import AppConfig


class TransferConfig(AppConfig):
    name = "transfer"
    verbose_name = "Transfer — memory into and out of the installation"

    def ready(self):
        from transfer import checks  # noqa: F401 (registers the system check)
