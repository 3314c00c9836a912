"""The system check that keeps the app off an installation a restore or import left
half-filled when it was stopped. Registered by ``transfer.apps.TransferConfig.ready``."""

from django.core.checks import Error, register

from transfer.stopped import stopped_run


@register()
def stopped_transfer_check(app_configs, **kwargs):
    stopped = stopped_run()
    if stopped is None:
        return []
    return [
        Error(
            f"The {stopped['what']} of {stopped['source']} that started at {stopped['started']} "
            "stopped part-way, so the installation is half-filled.",
            hint="Run manage.py restore --undo to put it back as it was before (or run the "
            "restore or import again, which does that first).",
            id="transfer.E001",
        )
    ]
