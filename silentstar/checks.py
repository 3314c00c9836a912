"""The project's own system checks, run by ``manage.py check`` and before every other command
that checks (runserver, migrate, qcluster). Registered by ``heart.apps.HeartConfig.ready``."""

import ipaddress

from django.conf import settings
from django.core.checks import Error, Tags, register


def loopback(host: str) -> bool:
    """Whether an ``ALLOWED_HOSTS`` entry names this machine alone: ``localhost`` and the names
    under it (``.localhost`` included), a loopback address (``127.0.0.1``, ``[::1]``)."""
    name = host.lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name.removeprefix("[").removesuffix("]")).is_loopback
    except ValueError:
        return False


@register(Tags.security)
def plain_http_check(app_configs, **kwargs) -> list[Error]:
    """Debug off means production: refuse it over plain HTTP unless that is asked for, or the
    site answers to this machine's own names alone, which no other machine's browser uses."""
    if settings.DEBUG or settings.HTTPS or settings.ALLOW_PLAIN_HTTP:
        return []
    beyond = [host for host in settings.ALLOWED_HOSTS if not loopback(host)]
    if not beyond:
        return []
    return [
        Error(
            "SILENTSTAR_DEBUG is off, SILENTSTAR_HTTPS is not on and SILENTSTAR_ALLOWED_HOSTS "
            f"names hosts beyond this machine ({', '.join(beyond)}): sign-in passwords and "
            "session cookies would cross the network in plain HTTP.",
            hint="Set SILENTSTAR_HTTPS=true (behind a reverse proxy that terminates TLS, also "
            "SILENTSTAR_BEHIND_PROXY=true), or set SILENTSTAR_ALLOW_PLAIN_HTTP=true to serve "
            "plain HTTP on purpose (a private network you trust), or allow only this machine's "
            "own names (localhost, 127.0.0.1, [::1]), which need neither.",
            id="silentstar.E001",
        )
    ]
