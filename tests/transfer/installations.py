"""Real installations for the transfer tests, each in its own processes, on the backend the suite
runs on (SQLite files, or PostgreSQL databases made for the test): what they run, how they are
made and compared."""

import functools
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import uuid
from contextlib import closing
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from django.conf import settings
from django.db import connections
from filelock import FileLock

from tests.conftest import REPO, requirement_missing

STORES = ("default", "events", "summaries", "snapshots")
MIGRATE = "\n".join(
    [
        "from django.core.management import call_command",
        *(f"call_command('migrate', database={alias!r}, verbosity=0)" for alias in STORES),
    ]
)
# The source documents' identities too: the tests' conversations are luna's, with claude.
OWNER_AND_SCHEDULES = """
from django.core.management import call_command
call_command('ensure_owner')
call_command('ensure_schedules')
call_command('source_identities')
"""
FILL = """
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from gem.models import Fragment
from events.models import Event
from heart.services import turn_submit
from ledger.models import ModelCall
from mirror.models import Summary

image = default_storage.save('images/2026/11/photo.png', ContentFile(bytes(range(256)) * 40))
turn_submit(text='<luna>look, the lighthouse <pin>tea without sugar</pin></luna>', actor='luna',
            image=image)
turn_submit(text='<luna>and its keeper</luna>', actor='luna')
Fragment.objects.create(key='lighthouse', ambient='A white tower on the point.')
ids = sorted(Event.objects.values_list('id', flat=True))
Summary.objects.create(level='L0', first_event_id=ids[0], last_event_id=ids[-1],
                       content='They talked about the lighthouse.')
ModelCall.objects.create(ts=Event.objects.get(pk=ids[-1]).ts, component='heart', model='offline',
                         offline=True, input_tokens=900, output_tokens=30, cache_read_tokens=0,
                         cache_write_5m_tokens=0, cache_write_1h_tokens=0)
"""
# The tables Django's introspection names (``table_names()``: tables, not views), on each backend.
SQLITE_TABLES = (
    "SELECT name FROM sqlite_master WHERE type = 'table' AND name != 'sqlite_sequence' "
    "ORDER BY name"
)
POSTGRES_TABLES = """
SELECT c.relname FROM pg_catalog.pg_class c
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('f', 'p', 'r') AND NOT c.relispartition
  AND n.nspname NOT IN ('pg_catalog', 'pg_toast') AND pg_catalog.pg_table_is_visible(c.oid)
ORDER BY c.relname
"""
EVENT_IDS = (
    "import json; from events.models import Event; "
    "print(json.dumps(sorted(Event.objects.values_list('id', flat=True))))"
)
# Turns written one after another, each with an image, until the stop file appears.
WRITE = """
import os
from pathlib import Path
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from heart.services import turn_submit

n = 0
while not Path(os.environ['STOP']).exists():
    image = default_storage.save(f'images/2026/11/turn{n}.png', ContentFile(os.urandom(3000)))
    turn_submit(text=f'<luna>turn {n} <pin>thing {n}</pin></luna>', actor='luna', image=image)
    n += 1
    Path(os.environ['WRITTEN']).write_text(str(n))
"""
# What must hold in any consistent state: every reference resolves, every image is there,
# and the search index has every event.
CONSISTENCY = """
import json
from django.core.files.storage import default_storage
from django.db import connections
from gem.models import WorkingMemory
from events.models import Event, Turn
from heart.models import ContextSnapshot

events = set(Event.objects.values_list('id', flat=True))
turns = set(Turn.objects.values_list('id', flat=True))
events_store = connections['events']
index = 'lens_event_fts' if events_store.vendor == 'sqlite' else 'lens_event_index'
with events_store.cursor() as cursor:
    cursor.execute(f'SELECT count(*) FROM {index}')
    indexed = cursor.fetchone()[0]
print(json.dumps({
    'events': len(events),
    'images': sorted(Event.objects.exclude(image='').values_list('image', flat=True)),
    'problems': [
        *(f'turn {t} has no event {e}' for t, e in Turn.objects.values_list('id', 'event_id')
          if e not in events),
        *(f'turn {t} has no reply {r}' for t, r in Turn.objects.values_list('id', 'reply_event_id')
          if r is not None and r not in events),
        *(f'snapshot of a missing turn {t}' for t in ContextSnapshot.objects.values_list(
            'turn', flat=True) if t not in turns),
        *(f'working memory of a missing event {e}' for e in WorkingMemory.objects.values_list(
            'event_id', flat=True) if e is not None and e not in events),
        *(f'event {e} has no image {name}' for e, name in Event.objects.exclude(image='')
          .values_list('id', 'image') if not default_storage.exists(name)),
        *([f'{indexed} events indexed of {len(events)}'] if indexed != len(events) else []),
    ],
}))
"""


def postgresql() -> bool:
    return connections["events"].vendor == "postgresql"


def postgres_tools_required() -> None:
    if not (shutil.which("pg_dump") and shutil.which("pg_restore")):
        requirement_missing(
            "pg_dump and pg_restore are missing (Debian: apt-get install postgresql-client)"
        )


class Installation:
    """One Silentstar installation: its data folder and, on PostgreSQL, databases of its own.
    ``set_up_rows``: for a copy of a set-up installation, the rows it was made with (read once,
    from the set-up installation)."""

    def __init__(self, data: Path, database_urls: dict[str, str], *, set_up_rows=None):
        self.data = data
        self.database_urls = database_urls
        self.set_up_rows: dict[str, list[str]] | None = set_up_rows
        self.env = {
            **os.environ,
            "SILENTSTAR_DATA_DIR": str(data),
            "ANTHROPIC_API_KEY": "",
            "SILENTSTAR_Q_SYNC": "true",
            "DATABASE_URL": "",
            "EVENTS_DATABASE_URL": "",
            "SUMMARIES_DATABASE_URL": "",
            "SNAPSHOTS_DATABASE_URL": "",
            **database_urls,
        }

    def manage(self, *args: str, env: dict[str, str] | None = None):
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=REPO,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=120,
        )

    def shell(self, code: str) -> str:
        done = self.manage("shell", "--no-imports", "-c", code)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def store(self, alias: str) -> Path | str:
        """The database holding the store ``alias``: a SQLite file, or a PostgreSQL URL."""
        if self.database_urls:
            variable = "DATABASE_URL" if alias == "default" else f"{alias.upper()}_DATABASE_URL"
            return self.database_urls.get(variable) or self.database_urls["DATABASE_URL"]
        return self.data / settings.SQLITE_FILES[alias]

    def databases(self) -> dict[str, Path | str]:
        """Each database of the installation (a SQLite file, or a PostgreSQL URL) by the first
        store it holds."""
        found: dict[Path | str, str] = {}
        for alias in STORES:
            found.setdefault(self.store(alias), alias)
        return {alias: where for where, alias in found.items()}

    def rows(self) -> dict[str, list[str]]:
        """Every row of every table of each database, the search indexes' own tables included,
        by ``"<store> <table>"``. Read from here, with sqlite3 or psycopg: a ``manage.py``
        process would spend a second starting Django for each look."""
        tables = {}
        for alias, where in self.databases().items():
            if isinstance(where, Path):
                if not where.exists():
                    continue
                with closing(sqlite3.connect(where)) as connection:
                    for (name,) in connection.execute(SQLITE_TABLES).fetchall():
                        found = connection.execute(f'SELECT * FROM "{name}"').fetchall()
                        tables[f"{alias} {name}"] = sorted(repr(row) for row in found)
            else:
                with psycopg.connect(where) as connection:
                    for (name,) in connection.execute(POSTGRES_TABLES).fetchall():
                        found = connection.execute(f'SELECT * FROM "{name}"').fetchall()
                        tables[f"{alias} {name}"] = sorted(repr(row) for row in found)
        return tables

    def event_ids(self) -> list[int]:
        """The event log's ids in order (what ``EVENT_IDS`` prints), read from here as
        ``rows()`` reads, without a ``manage.py`` process."""
        from events.models import Event

        query = f'SELECT id FROM "{Event._meta.db_table}" ORDER BY id'
        where = self.store("events")
        if isinstance(where, Path):
            with closing(sqlite3.connect(where)) as connection:
                return [row[0] for row in connection.execute(query)]
        with psycopg.connect(where) as connection:
            return [row[0] for row in connection.execute(query)]

    @functools.cached_property
    def rows_kept(self) -> dict[str, list[str]]:
        """``rows()`` read once and kept, for an installation nothing changes any more (the
        ``filled`` source, which its tests only read)."""
        return self.rows()

    def images(self) -> dict[str, bytes]:
        media = self.data / "media"
        return {str(path.relative_to(media)): path.read_bytes() for path in media.rglob("*.png")}

    def backup(self, into: Path, *args: str) -> Path:
        done = self.manage("backup", str(into), *args)
        assert done.returncode == 0, done.stderr
        (written,) = [line for line in done.stdout.splitlines() if "Backup written to" in line]
        return Path(written.removeprefix("Backup written to "))

    def restore(self, folder: Path) -> subprocess.CompletedProcess:
        return self.manage("restore", str(folder))


class PostgresDatabases:
    """Databases made on the suite's PostgreSQL server, dropped at the end."""

    def __init__(self):
        self.base = urlsplit(os.environ["DATABASE_URL"])
        self.made = []

    def _server(self) -> psycopg.Connection:
        return psycopg.connect(urlunsplit(self.base._replace(path="/postgres")), autocommit=True)

    def create(self, *, template: str = "") -> str:
        name = f"backup_{uuid.uuid4().hex[:12]}"
        with self._server() as server:
            copied = f' TEMPLATE "{template}"' if template else ""
            server.execute(f'CREATE DATABASE "{name}"{copied}')
        self.made.append(name)
        return urlunsplit(self.base._replace(path=f"/{name}"))

    def drop_all(self) -> None:
        with self._server() as server:
            for name in self.made:
                server.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def postgres_databases():
    if not postgresql():
        yield None
        return
    postgres_tools_required()
    databases = PostgresDatabases()
    yield databases
    databases.drop_all()


@pytest.fixture(scope="session")
def set_up_installations(tmp_path_factory, postgres_databases, request):
    """One migrated installation with its owner and schedules for each layout of the stores,
    set up once; each test's installations are copies of it. On SQLite, where the stores are
    files whatever the layout, there is one, set up once for the whole run (its test processes
    share it, as they only copy it) from copies of the stores the run migrated once
    (``sqlite_stores_migrated``)."""
    made = {}

    def set_up(events_apart: bool) -> Installation:
        if not postgres_databases:
            if None not in made:
                made[None] = sqlite_set_up(
                    tmp_path_factory, request.getfixturevalue("sqlite_stores_migrated")
                )
            return made[None]
        if events_apart not in made:
            urls = {"DATABASE_URL": postgres_databases.create()}
            if events_apart:
                urls["EVENTS_DATABASE_URL"] = postgres_databases.create()
            made[events_apart] = Installation(tmp_path_factory.mktemp("set-up"), urls)
            made[events_apart].shell(MIGRATE + OWNER_AND_SCHEDULES)
            made[events_apart].set_up_rows = made[events_apart].rows()
        return made[events_apart]

    return set_up


def sqlite_set_up(tmp_path_factory, migrated: Path) -> Installation:
    """The SQLite installation with its owner and schedules, made by the first test process
    that asks for it and shared by the others."""
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # the run's folder, above each test process's own
    folder = shared / "sqlite-installation-set-up"
    with FileLock(shared / "sqlite-installation-set-up.lock"):
        if not folder.exists():
            made = folder.with_name(folder.name + ".making")
            shutil.rmtree(made, ignore_errors=True)
            shutil.copytree(migrated, made)
            Installation(made, {}).shell(OWNER_AND_SCHEDULES)
            made.rename(folder)
    set_up = Installation(folder, {})
    set_up.set_up_rows = set_up.rows()
    return set_up


def installation_copy(template: Installation, data: Path, databases) -> Installation:
    """A new installation in ``data``, a copy of ``template`` (its databases copied too)."""
    shutil.copytree(template.data, data)
    urls = {
        variable: databases.create(template=urlsplit(url).path.lstrip("/"))
        for variable, url in template.database_urls.items()
    }
    return Installation(data, urls, set_up_rows=template.set_up_rows)


@pytest.fixture
def installation(tmp_path, set_up_installations, postgres_databases, request):
    """Make a new, set-up installation (migrated, with its owner and schedules) by name; with
    ``events_apart``, on PostgreSQL, the events store gets a database of its own. With
    ``filled``, it is a copy of ``filled``'s source instead, holding ``FILL`` for a test to
    change: copying it costs a fraction of the ``manage.py`` process that fills one."""

    def make(name: str, *, events_apart: bool = False, filled: bool = False) -> Installation:
        if filled:
            assert not events_apart, "the filled installation keeps every store in one database"
            template = request.getfixturevalue("filled")[0]
        else:
            template = set_up_installations(events_apart)
        return installation_copy(template, tmp_path / name, postgres_databases)

    return make


@pytest.fixture(scope="session")
def filled(tmp_path_factory, set_up_installations, postgres_databases):
    """An installation holding ``FILL`` and a backup of it, made once for every module's tests
    that only read them (restoring the backup elsewhere, damaging copies of it):
    ``(source, backup)``."""
    folder = tmp_path_factory.mktemp("filled")
    source = installation_copy(set_up_installations(False), folder / "source", postgres_databases)
    source.shell(FILL)
    return source, source.backup(folder / "backups")


def table(rows: dict[str, list[str]], name: str) -> list[str]:
    """A table's rows, whichever store's database holds it."""
    (found,) = [table_rows for key, table_rows in rows.items() if key.endswith(f" {name}")]
    return found


def checksums_hold(folder: Path) -> dict:
    manifest = json.loads((folder / "manifest.json").read_text())
    for entry in manifest["databases"] + manifest["files"]:
        data = (folder / entry["name"]).read_bytes()
        assert (len(data), hashlib.sha256(data).hexdigest()) == (entry["size"], entry["sha256"])
    return manifest


def overwrite_middle(path: Path, size: int = 4096) -> None:
    """Damage a file as a failing disk would: ``size`` bytes in its middle overwritten, on a
    boundary of SQLite's pages."""
    data = bytearray(path.read_bytes())
    start = len(data) // 2 // size * size
    data[start : start + size] = bytes(range(256)) * (size // 256)
    path.write_bytes(bytes(data))


def manifest_fix(folder: Path, name: str) -> None:
    """Write the size and checksum of the file ``name`` as it is now into the backup's
    manifest, as someone hiding a damage would."""
    path = folder / "manifest.json"
    manifest = json.loads(path.read_text())
    data = (folder / name).read_bytes()
    for entry in manifest["databases"] + manifest["files"]:
        if entry["name"] == name:
            entry.update(size=len(data), sha256=hashlib.sha256(data).hexdigest())
    path.write_text(json.dumps(manifest, indent=2))
