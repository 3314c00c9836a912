from django.apps import AppConfig


class LedgerConfig(AppConfig):
    name = "ledger"
    verbose_name = "Ledger — what every call to Claude cost"

    def ready(self):
        from ledger.services import model_called_record
        from silentstar.claude import model_called

        model_called.connect(model_called_record, dispatch_uid="ledger.model_called_record")
