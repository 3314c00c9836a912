"""The project's own system checks, run by ``manage.py check`` and before every other command
that checks (runserver, migrate, qcluster). Registered by ``heart.apps.HeartConfig.ready``."""

from django.conf import settings
from django.core.checks import Error, Tags, register


@register(Tags.security)
def plain_http_check(app_configs, **kwargs) -> list[Error]:
    """Debug off means production: refuse it over plain HTTP unless that is asked for."""
    if settings.DEBUG or settings.HTTPS or settings.ALLOW_PLAIN_HTTP:
        return []
    return [
        Error(
            "SILENTSTAR_DEBUG is off but SILENTSTAR_HTTPS is not on: sign-in passwords and "
            "session cookies would travel in plain HTTP.",
            hint="Set SILENTSTAR_HTTPS=true (behind a reverse proxy that terminates TLS, also "
            "SILENTSTAR_BEHIND_PROXY=true), or set SILENTSTAR_ALLOW_PLAIN_HTTP=true to serve "
            "plain HTTP on purpose (a private network, a trial on one machine).",
            id="silentstar.E001",
        )
    ]
