"""The project's own system checks, run by ``manage.py check`` and before every other command
that checks (runserver, migrate, qcluster). Registered by ``heart.apps.HeartConfig.ready``."""

import ipaddress
from pathlib import Path

from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, register
from django.core.checks import Warning as CheckWarning
from django.db import connections

from silentstar.disks import (
    FULL_BELOW_BYTES,
    folder_write_problem,
    free_bytes,
    sqlite_write_problem,
)


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


@register()
def disk_check(app_configs, databases=None, **kwargs) -> list[CheckMessage]:
    """A data folder and stores that take writes, and room left on the disk: said before anything
    runs rather than met as a refused message. A PostgreSQL store is asked only when the command
    names it (``check --database default``, ``migrate``)."""
    problems: list[CheckMessage] = []
    folder = Path(settings.DATA_DIR)
    if folder.is_dir():
        if (why := folder_write_problem(folder)) is not None:
            problems.append(
                Error(
                    f"The data folder {folder} cannot be written ({why}): Silentstar could "
                    "store nothing, and every message would be refused.",
                    hint="Make the folder writable by the user Silentstar runs as, or mount its "
                    "disk read-write.",
                    id="silentstar.E020",
                )
            )
        elif (free := free_bytes(folder)) < FULL_BELOW_BYTES:
            problems.append(
                CheckWarning(
                    f"The disk holding the data folder {folder} is full: every message is "
                    "refused until space is freed.",
                    hint="Free some space, or move the data folder (SILENTSTAR_DATA_DIR) to a "
                    "larger disk.",
                    id="silentstar.W021",
                )
            )
        elif free < settings.DISK_FREE_MIN_MB * 2**20:
            problems.append(
                CheckWarning(
                    f"The disk holding the data folder {folder} has only {free // 2**20} MB free: "
                    "once it is full, messages are refused until space is freed.",
                    hint="Free some space, or move the data folder (SILENTSTAR_DATA_DIR) to a "
                    "larger disk; SILENTSTAR_DISK_FREE_MIN_MB sets when this warning shows.",
                    id="silentstar.W020",
                )
            )
    for alias in connections:
        connection = connections[alias]
        if connection.vendor == "sqlite":
            name = str(connection.settings_dict["NAME"])
            why = None if connection.is_in_memory_db() else sqlite_write_problem(Path(name))
        elif connection.vendor == "postgresql" and alias in (databases or ()):
            with connection.cursor() as cursor:
                cursor.execute("SELECT current_setting('transaction_read_only')")
                why = "the server is read-only" if cursor.fetchone()[0] == "on" else None
        else:
            why = None
        if why is not None:
            problems.append(
                Error(
                    f"The {alias} store cannot take a write ({why}): every message would be "
                    "refused.",
                    hint="Make its file and the data folder writable by the user Silentstar "
                    "runs as, or give the database back its writes.",
                    id="silentstar.E021",
                )
            )
    return problems
