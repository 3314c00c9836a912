"""A full disk or read-only data, recognised and said (silentstar/disks.py).

``store_full`` and ``store_read_only`` make a store refuse writes the way a full disk or
read-only data does, for the tests of the chat, the commands and the Anvil.
"""

import errno
import html
import os
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace

import django
import psycopg.errors
import pytest
from django.db import InternalError, OperationalError, connections
from django.urls import reverse
from django.utils import timezone

import manage
from silentstar import disks
from silentstar.disks import (
    FULL,
    READ_ONLY,
    disk_said,
    disk_trouble,
    folder_write_problem,
    sqlite_write_problem,
)

SQLITE_MOST_PAGES = 4294967294  # SQLite's own default for max_page_count


@contextmanager
def store_full(alias: str, *, table: str, filler: str) -> Iterator[None]:
    """The store ``alias`` as a full disk leaves it, for inserts into ``table``.

    SQLite: no page more (``PRAGMA max_page_count``, this connection's), and the free room of
    the pages there taken by rows inserted with ``filler`` (an INSERT with a ``%s`` for a time),
    so the next row that is larger meets "database or disk is full". SQLite then rolls back the
    whole transaction it was in, so a test of it commits (a transactional test). PostgreSQL: an
    insert into ``table`` refused by a trigger with SQLSTATE 53100 (disk_full), as the server
    refuses one when its disk is full."""
    connection = connections[alias]
    if connection.vendor == "postgresql":
        with _postgres_refusing(alias, table=table, sqlstate="53100", said="could not extend"):
            yield
        return
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA page_count")
        cursor.execute(f"PRAGMA max_page_count = {cursor.fetchone()[0]}")
        try:
            moment = connection.ops.adapt_datetimefield_value(timezone.now())
            for _ in range(100_000):
                cursor.execute(filler, [moment])
        except OperationalError as error:
            assert disk_trouble(error) is FULL
        else:
            raise AssertionError(f"{alias} never filled up")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"PRAGMA max_page_count = {SQLITE_MOST_PAGES}")


@contextmanager
def store_read_only(alias: str, *, table: str) -> Iterator[None]:
    """The store ``alias`` refusing writes as read-only data does: on SQLite every write of this
    connection (``PRAGMA query_only``, "attempt to write a readonly database"); on PostgreSQL an
    insert into ``table``, by a trigger raising SQLSTATE 25006 (read_only_sql_transaction)."""
    connection = connections[alias]
    if connection.vendor == "postgresql":
        with _postgres_refusing(alias, table=table, sqlstate="25006", said="read-only"):
            yield
        return
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA query_only = ON")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA query_only = OFF")


@contextmanager
def _postgres_refusing(alias: str, *, table: str, sqlstate: str, said: str) -> Iterator[None]:
    """Inserts into ``table`` refused with ``sqlstate``; in a test's transaction the trigger goes
    with it, else (a transactional test) it is dropped afterwards."""
    connection = connections[alias]
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE FUNCTION disks_refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            f"RAISE EXCEPTION '{said}' USING ERRCODE = '{sqlstate}'; END $$"
        )
        cursor.execute(
            f"CREATE TRIGGER disks_refuse BEFORE INSERT ON {table} "
            "FOR EACH ROW EXECUTE FUNCTION disks_refuse()"
        )
    try:
        yield
    finally:
        if not connection.in_atomic_block:
            with connection.cursor() as cursor:
                cursor.execute(f"DROP TRIGGER disks_refuse ON {table}")
                cursor.execute("DROP FUNCTION disks_refuse()")


# --- Recognising ------------------------------------------------------------------------------


def sqlite_error(*, pragma: str, statement: str) -> sqlite3.Error:
    connection = sqlite3.connect(":memory:", isolation_level=None)
    connection.execute("CREATE TABLE t (x)")
    connection.execute(pragma)
    try:
        connection.execute(statement)
    except sqlite3.Error as error:
        return error
    finally:
        connection.close()
    raise AssertionError(f"{statement} did not fail under {pragma}")


def as_django_wraps(error: Exception, wrapper=OperationalError) -> Exception:
    """The error as Django raises it: its own class, with the driver's as ``__cause__``."""
    try:
        try:
            raise error
        except Exception as cause:
            raise wrapper(*cause.args) from cause
    except wrapper as wrapped:
        return wrapped


@pytest.mark.store_free
def test_it_knows_sqlite_full_and_read_only_from_the_driver_or_through_django():
    full = sqlite_error(
        pragma="PRAGMA max_page_count = 2", statement="INSERT INTO t VALUES (zeroblob(100000))"
    )
    read_only = sqlite_error(pragma="PRAGMA query_only = ON", statement="INSERT INTO t VALUES (1)")
    assert disk_trouble(full) is FULL and disk_trouble(as_django_wraps(full)) is FULL
    assert disk_trouble(read_only) is READ_ONLY
    assert disk_trouble(as_django_wraps(read_only)) is READ_ONLY


@pytest.mark.store_free
def test_it_knows_a_connection_that_finds_no_room_for_its_wal_index():
    """What opening a store in WAL mode on a full disk raises (seen on a full tmpfs)."""
    error = sqlite3.OperationalError("disk I/O error")
    error.sqlite_errorname = "SQLITE_IOERR_SHMSIZE"
    assert disk_trouble(as_django_wraps(error)) is FULL
    error.sqlite_errorname = "SQLITE_IOERR_READ"  # the disk itself failing: not for us to say
    assert disk_trouble(as_django_wraps(error)) is None


@pytest.mark.store_free
def test_it_knows_postgresqls_disk_full_and_read_only_transaction_as_django_wraps_them():
    full = as_django_wraps(psycopg.errors.DiskFull("could not extend file"))
    read_only = as_django_wraps(
        psycopg.errors.ReadOnlySqlTransaction("cannot execute INSERT in a read-only transaction"),
        InternalError,
    )
    assert disk_trouble(full) is FULL
    assert disk_trouble(read_only) is READ_ONLY


@pytest.mark.store_free
@pytest.mark.parametrize(
    ("number", "trouble"),
    [(errno.ENOSPC, FULL), (errno.EDQUOT, FULL), (errno.EROFS, READ_ONLY), (errno.ENOENT, None)],
)
def test_it_knows_a_file_write_on_a_full_or_read_only_disk(number, trouble):
    assert disk_trouble(OSError(number, "refused")) is trouble


@pytest.mark.store_free
def test_it_knows_an_error_raised_while_a_full_disk_was_being_handled():
    try:
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        except OSError:
            raise RuntimeError("the clean-up failed too") from None
    except RuntimeError as error:
        assert disk_trouble(error) is FULL


@pytest.mark.store_free
def test_it_leaves_other_errors_alone():
    assert disk_trouble(OperationalError("no such table: heart_event")) is None
    assert disk_trouble(as_django_wraps(psycopg.errors.UndefinedTable("heart_event"))) is None
    assert disk_trouble(ValueError("full of surprises")) is None
    assert disk_trouble(None) is None


@pytest.mark.store_free
def test_it_says_each_in_one_sentence():
    assert disk_said(FULL, stopped="Not sent", again="send again") == (
        "Not sent: the disk holding Silentstar's data is full. Free some space and send again."
    )
    assert disk_said(READ_ONLY, stopped="Stopped", again="run it again") == (
        "Stopped: Silentstar's data is read-only, so nothing can be written. Make the data "
        "folder (or the database) writable and run it again."
    )


# --- Looking before anything runs ---------------------------------------------------------------


@pytest.mark.store_free
def test_it_writes_and_removes_a_small_file_to_see_that_a_folder_takes_writes(tmp_path):
    assert folder_write_problem(tmp_path) is None
    assert list(tmp_path.iterdir()) == []


@pytest.mark.store_free
def test_it_says_why_a_folder_takes_no_writes(tmp_path, monkeypatch):
    def refused(**kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(disks.tempfile, "mkstemp", refused)
    assert folder_write_problem(tmp_path) == "Read-only file system"


@pytest.mark.store_free
def test_it_sees_whether_a_sqlite_store_takes_a_write(tmp_path, monkeypatch):
    path = tmp_path / "store.sqlite3"
    assert sqlite_write_problem(path) is None and not path.exists()  # not made by looking
    sqlite3.connect(path).close()
    assert sqlite_write_problem(path) is None

    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # being written elsewhere: it takes writes
    assert sqlite_write_problem(path) is None
    holder.execute("ROLLBACK")
    holder.close()

    opened = disks._sqlite_open

    def read_only(at):
        connection = opened(at)
        connection.execute("PRAGMA query_only = ON")
        return connection

    monkeypatch.setattr(disks, "_sqlite_open", read_only)
    assert sqlite_write_problem(path) == "attempt to write a readonly database"


# --- Pages ------------------------------------------------------------------------------------


@pytest.mark.django_db(databases="__all__")
def test_it_says_read_only_data_at_sign_in_instead_of_a_server_error(client, django_user_model):
    django_user_model.objects.create_user(username="luna", password="a long passphrase")
    with store_read_only("default", table="django_session"):
        assert client.get(reverse("login")).status_code == 200
        response = client.post(
            reverse("login"), {"username": "luna", "password": "a long passphrase"}
        )
    assert response.status_code == 503
    page = html.unescape(response.content.decode())
    assert "<title>Silentstar — the data is read-only</title>" in page
    assert (
        "Not done: Silentstar's data is read-only, so nothing can be written. Make the data "
        "folder (or the database) writable and try again."
    ) in page
    assert "Traceback" not in page and "OperationalError" not in page


# --- Commands ---------------------------------------------------------------------------------


@pytest.mark.django_db(databases="__all__")
def test_it_stops_a_command_on_read_only_data_with_one_sentence(monkeypatch, capsys):
    """manage.py's own wrapper around every command, run in this process: Django is set up
    already (its logging is left as the test's), and the test's connections stay open."""
    monkeypatch.setattr(django, "setup", lambda *args, **kwargs: None)
    monkeypatch.setattr(connections, "close_all", lambda: None)
    monkeypatch.setattr(sys, "argv", ["manage.py", "turn", "hello", "--skip-checks"])
    with store_read_only("events", table="heart_event"), pytest.raises(SystemExit) as stopped:
        manage.main()
    assert stopped.value.code == 1
    assert capsys.readouterr().err == (
        "Stopped: Silentstar's data is read-only, so nothing can be written. Make the data "
        "folder (or the database) writable and run it again.\n"
    )
    monkeypatch.setattr(sys, "argv", ["manage.py", "shell", "-c", "raise ValueError('other')"])
    with pytest.raises(ValueError, match="other"):  # any other error as it was
        manage.main()


@pytest.mark.django_db(databases="__all__")
def test_it_says_a_store_that_cannot_open_on_a_read_only_mount_before_any_view(client, monkeypatch):
    """A store in WAL mode on a file system mounted read-only cannot even be opened, and the
    first to try is a middleware (the owner's time zone), not a view."""

    def cannot_open():
        error = sqlite3.OperationalError("unable to open database file")
        error.sqlite_errorname = "SQLITE_CANTOPEN"
        raise as_django_wraps(error)

    monkeypatch.setattr("heart.zone.owner_time_zone", cannot_open)
    monkeypatch.setattr(disks.os, "statvfs", lambda path: SimpleNamespace(f_flag=os.ST_RDONLY))
    client.raise_request_exception = False
    response = client.get(reverse("login"))
    assert response.status_code == 503
    assert "<title>Silentstar — the data is read-only</title>" in response.content.decode()
