"""Waiting out a locked database: how a lock error is recognised, and a write tried again.

SQLite says "database is locked" when another connection held the write lock for longer than
the busy timeout (a Mirror run, a sweep, an import); PostgreSQL names a lock timeout, a deadlock
or a serialisation failure by its SQLSTATE.
"""

import logging
import time
from collections.abc import Callable

from django.db import OperationalError

logger = logging.getLogger(__name__)

LOCK_SQLSTATES = frozenset({"55P03", "40P01", "40001"})  # lock not available, deadlock, conflict
PATIENCE = 30.0  # seconds a write waits out a locked database, unless its caller says otherwise
FIRST_WAIT = 0.05  # seconds before the first try again; doubles up to the next
LONGEST_WAIT = 2.0


def lock_error(error: OperationalError) -> bool:
    """Whether ``error`` is a lock held elsewhere, which goes away by waiting."""
    message = str(error)
    if "database is locked" in message or "database table is locked" in message:
        return True
    return getattr(error.__cause__, "sqlstate", None) in LOCK_SQLSTATES


def when_unlocked[T](
    write: Callable[[], T], *, patience: float | None = None, until: float | None = None
) -> T:
    """``write()``, tried again with a growing wait while the database is locked, for up to
    ``patience`` seconds, or until the moment ``until`` (``time.monotonic()``; several writes
    can share one). ``write`` must be safe to repeat: a statement, or one transaction, that
    failed on a lock left nothing behind."""
    if until is None:
        until = time.monotonic() + (patience or 0.0)
    wait = FIRST_WAIT
    while True:
        try:
            return write()
        except OperationalError as error:
            if not lock_error(error) or time.monotonic() + wait > until:
                raise
            logger.warning("The database is locked (%s); trying again in %.2f s", error, wait)
            time.sleep(wait)
            wait = min(wait * 2, LONGEST_WAIT)
