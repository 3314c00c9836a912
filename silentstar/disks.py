"""A full disk or a read-only data folder: recognised in whatever error it reaches us as, and said
in words by the chat, the commands (manage.py), every other page (``DiskTroubleMiddleware``),
the worker's turns and ``manage.py check`` (silentstar/checks.py).

SQLite names its errors (``sqlite_errorname``): SQLITE_FULL, or SQLITE_IOERR_SHMSIZE when a
connection cannot even make its WAL index, and SQLITE_READONLY and its kinds (SQLITE_CANTOPEN
when the data folder is mounted read-only); PostgreSQL
names its errors by SQLSTATE, 53100 (disk_full) and 25006 (read_only_sql_transaction); a file
written in the data folder (an image, the archive, the cache) fails with ENOSPC or EDQUOT (full)
or EROFS (read-only). Django wraps a database's error in its own with the driver's as
``__cause__``, so the whole chain is read.
"""

import errno
import logging
import os
import shutil
import sqlite3
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class DiskTrouble:
    what: str  # what is wrong, as the middle of a sentence
    remedy: str  # what the person does about it, as the start of a sentence
    title: str  # a page's title
    status: int  # the HTTP status a page answers with


FULL = DiskTrouble(
    what="the disk holding Silentstar's data is full",
    remedy="Free some space",
    title="the disk is full",
    status=507,  # Insufficient Storage
)
READ_ONLY = DiskTrouble(
    what="Silentstar's data is read-only, so nothing can be written",
    remedy="Make the data folder (or the database) writable",
    title="the data is read-only",
    status=503,
)

FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
READ_ONLY_ERRNOS = frozenset({errno.EROFS})
FULL_SQLSTATES = frozenset({"53100"})  # disk_full
READ_ONLY_SQLSTATES = frozenset({"25006"})  # read_only_sql_transaction
FULL_BELOW_BYTES = 2**20  # free space under which the data folder is taken to be full
# A connection's first use makes room for its WAL index (the -shm file): on a full disk that fails
# as "disk I/O error" of this kind, before any write.
SQLITE_FULL_NAMES = frozenset({"SQLITE_FULL", "SQLITE_IOERR_SHMSIZE"})


def disk_trouble(error: BaseException | None) -> DiskTrouble | None:
    """``FULL`` or ``READ_ONLY`` when ``error``, or an error it was raised from or while
    handling, is a full disk or read-only data; else ``None``."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if (trouble := _trouble_of(error)) is not None:
            return trouble
        error = error.__cause__ or error.__context__
    return None


def _trouble_of(error: BaseException) -> DiskTrouble | None:
    if isinstance(error, OSError):
        if error.errno in FULL_ERRNOS:
            return FULL
        if error.errno in READ_ONLY_ERRNOS:
            return READ_ONLY
    sqlstate = getattr(error, "sqlstate", None) or getattr(error, "pgcode", None)
    if sqlstate in FULL_SQLSTATES:
        return FULL
    if sqlstate in READ_ONLY_SQLSTATES:
        return READ_ONLY
    name = getattr(error, "sqlite_errorname", "")
    if name in SQLITE_FULL_NAMES:
        return FULL
    if name.startswith("SQLITE_READONLY"):
        return READ_ONLY
    if name == "SQLITE_CANTOPEN" and _data_folder_mounted_read_only():
        return READ_ONLY  # a store in WAL mode cannot open without writing its -wal and -shm
    return None


def _data_folder_mounted_read_only() -> bool:
    """Whether the data folder lies on a file system mounted read-only (the one impure look
    here: "unable to open database file" says no more than that)."""
    from django.conf import settings

    try:
        return bool(os.statvfs(settings.DATA_DIR).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError, ImportError):
        return False


def disk_said(trouble: DiskTrouble, *, stopped: str, again: str) -> str:
    """One sentence: ``disk_said(FULL, stopped="Not sent", again="send again")`` is "Not sent:
    the disk holding Silentstar's data is full. Free some space and send again."."""
    return f"{stopped}: {trouble.what}. {trouble.remedy} and {again}."


# --- Pages ------------------------------------------------------------------------------------


class DiskTroubleMiddleware:
    """A request that met a full disk or read-only data is answered with a short page saying
    so (507 or 503) instead of a server error; what was typed in a form is still in the
    browser. A view's error comes through ``process_exception``; one raised in a middleware
    after this one (a store that cannot even be opened is met first by the owner's time zone) is
    noted as Django reports it (``got_request_exception``), and its error page replaced."""

    def __init__(self, get_response):
        from django.core.signals import got_request_exception

        self.get_response = get_response
        got_request_exception.connect(_trouble_noted, dispatch_uid="silentstar.disks")

    def __call__(self, request):
        response = self.get_response(request)
        trouble = getattr(request, "disk_trouble", None)
        if trouble is not None and response.status_code == 500:
            return _trouble_page(request, trouble)
        return response

    def process_exception(self, request, exception):
        trouble = disk_trouble(exception)
        if trouble is None:
            return None
        logger.error(
            "%s %s refused: %s (%s)", request.method, request.path, trouble.what, exception
        )
        return _trouble_page(request, trouble)


def _trouble_noted(sender, request=None, **kwargs) -> None:
    trouble = disk_trouble(sys.exc_info()[1])
    if trouble is not None and request is not None:
        request.disk_trouble = trouble


def _trouble_page(request, trouble: DiskTrouble):
    from django.shortcuts import render

    reason = disk_said(trouble, stopped="Not done", again="try again")
    context = {"title": trouble.title, "reason": reason}
    return render(request, "disk_trouble.html", context, status=trouble.status)


# --- Looking before anything runs (manage.py check) --------------------------------------------


def folder_write_problem(folder: Path) -> str | None:
    """Why a small file cannot be made and removed in ``folder``, or ``None`` when it can."""
    try:
        handle, name = tempfile.mkstemp(prefix=".write-check-", dir=folder)
        os.close(handle)
        os.remove(name)
    except OSError as error:
        return error.strerror or str(error)
    return None


def sqlite_write_problem(path: Path) -> str | None:
    """Why the SQLite store at ``path`` cannot take a write (``BEGIN IMMEDIATE``, then rolled
    back), or ``None`` when it can, or when it does not exist yet, or another connection holds
    its write lock (it is being written, so it takes writes)."""
    if not path.exists():
        return None
    try:
        connection = _sqlite_open(path)
    except sqlite3.Error as error:
        return str(error)
    try:
        connection.execute("BEGIN IMMEDIATE")
        connection.execute("ROLLBACK")
    except sqlite3.OperationalError as error:
        if error.sqlite_errorname == "SQLITE_BUSY":
            return None
        return str(error)
    finally:
        connection.close()
    return None


def _sqlite_open(path: Path) -> sqlite3.Connection:
    # mode=rw: a missing file is not created; timeout 0: a held write lock answers at once.
    return sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=0, isolation_level=None)


def free_bytes(folder: Path) -> int:
    """The bytes free to this process on the disk holding ``folder``."""
    return shutil.disk_usage(folder).free


def data_folder_trouble() -> DiskTrouble | None:
    """``FULL`` or ``READ_ONLY`` when the data folder can take no write now (less than a
    mebibyte free, or mounted read-only), seen without writing; else ``None``."""
    from django.conf import settings

    if _data_folder_mounted_read_only():
        return READ_ONLY
    try:
        return FULL if free_bytes(settings.DATA_DIR) < FULL_BELOW_BYTES else None
    except OSError:
        return None
