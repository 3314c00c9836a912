"""``SILENTSTAR_BENCH_STORES``: the throwaway stores start as copies of migrated ones."""

import shutil
import sqlite3
from contextlib import closing

import pytest

from bench.stores import MIGRATED, StoresMissing, stores_start

pytestmark = pytest.mark.store_free


def test_it_copies_every_migrated_store_into_the_throwaway_folder(
    monkeypatch, tmp_path, sqlite_stores_migrated
):
    monkeypatch.setenv(MIGRATED, str(sqlite_stores_migrated))
    stores_start(tmp_path)

    with closing(sqlite3.connect(tmp_path / "events.sqlite3")) as events:
        assert events.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        tables = {name for (name,) in events.execute("SELECT name FROM sqlite_master")}
    assert {"heart_event", "heart_event_no_update", "django_migrations"} <= tables
    assert {path.name for path in tmp_path.glob("*.sqlite3")} == {
        "silentstar.sqlite3",
        "events.sqlite3",
        "summaries.sqlite3",
        "snapshots.sqlite3",
    }


def test_it_names_the_store_a_folder_lacks(monkeypatch, tmp_path, sqlite_stores_migrated):
    partial = shutil.copytree(sqlite_stores_migrated, tmp_path / "partial")
    (partial / "summaries.sqlite3").unlink()
    monkeypatch.setenv(MIGRATED, str(partial))

    with pytest.raises(StoresMissing, match=r"has no summaries\.sqlite3"):
        stores_start(tmp_path)


def test_it_leaves_the_folder_alone_when_unset(monkeypatch, tmp_path):
    monkeypatch.delenv(MIGRATED, raising=False)
    stores_start(tmp_path)
    assert list(tmp_path.iterdir()) == []
