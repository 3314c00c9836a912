"""One restore or import at a time in an installation.

The lock is a file lock in the data folder (``filelock``: ``flock`` on Linux and macOS), which
the system releases when its process ends however it ends, so a killed run never leaves it
held. Each PostgreSQL database also takes a session advisory lock, held on a connection of its
own, so two installations sharing a database but not a data folder still wait for each other.
A second run does not wait: it is refused at once with a sentence, and changes nothing.
"""

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

from django.conf import settings
from filelock import FileLock, Timeout

from transfer.backup import BackupError, databases, pg_connect

LOCK_FILE = "transfer.lock"
# pg_try_advisory_lock's key: "silentstar transfer" in a signed 64-bit number of its own.
ADVISORY_KEY = 0x5354_5246_0001


class TransferBusy(BackupError):
    """Another restore or import holds the installation."""


@contextmanager
def one_at_a_time(*, what: str) -> Iterator[None]:
    """Hold the installation for ``what`` (``"restore"``, ``"import"``) while the block runs;
    refuse with TransferBusy when another run holds it."""
    settings.DATA_DIR.mkdir(parents=True, exist_ok=True)
    path = settings.DATA_DIR / LOCK_FILE
    with ExitStack() as stack:
        try:
            stack.enter_context(FileLock(path, timeout=0))
        except Timeout:
            raise _busy(what, f"its lock, {path}, is held") from None
        for database in databases():
            if database.backend != "postgresql":
                continue
            connection = stack.enter_context(pg_connect(database.aliases[0]))
            connection.autocommit = True
            taken = connection.execute("SELECT pg_try_advisory_lock(%s)", [ADVISORY_KEY])
            if not taken.fetchone()[0]:
                raise _busy(what, f"the {database.aliases[0]} store's advisory lock is held")
        yield


def _busy(what: str, why: str) -> TransferBusy:
    return TransferBusy(
        f"another restore or import is running in this installation ({why}): "
        f"wait for it to end, then run this {what} again"
    )
