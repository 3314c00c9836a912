"""The Gem's migrations on a store that already holds working memory."""

import sqlite3

import pytest

from gem.meaning import semantic_hash
from tests.heart.test_worker import SQLITE_ONLY


@pytest.mark.store_free
def test_the_meaning_columns_come_in_place_keeping_the_triggers_and_scoring_old_items(
    manage, tmp_path, sqlite_stores_copy
):
    """SQLite's schema editor would copy the table to add them, dropping its triggers."""
    sqlite_stores_copy(tmp_path / "data")
    assert manage("migrate", "gem", "0008", env=SQLITE_ONLY).returncode == 0
    store = tmp_path / "data" / "silentstar.sqlite3"
    with sqlite3.connect(store) as gem:
        triggers_before = gem.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' "
            "AND tbl_name = 'gem_workingmemory' ORDER BY name"
        ).fetchall()
        gem.execute(
            "INSERT INTO gem_workingmemory (type, content, subject, actor, status, created_at, "
            "refreshed_at, importance, valence) VALUES ('pin', 'I hate cilantro', '', 'luna', "
            "'active', '2026-01-01 00:00:00', '2026-01-01 00:00:00', 0.5, 0)"
        )

    migrated = manage("migrate", "gem", env=SQLITE_ONLY)

    assert migrated.returncode == 0, migrated.stderr
    with sqlite3.connect(store) as gem:
        triggers_after = gem.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' "
            "AND tbl_name = 'gem_workingmemory' ORDER BY name"
        ).fetchall()
        row = gem.execute(
            "SELECT semantic_hash, importance, valence, importance_edited FROM gem_workingmemory"
        ).fetchone()
    assert len(triggers_before) == 7 and triggers_after == triggers_before
    assert row[0] == semantic_hash("I hate cilantro")
    assert row[2] < -0.3 and row[1] == round(0.8 + abs(row[2]) * 0.1, 2) and row[3] == 0
    assert manage("migrate", "gem", "0008", env=SQLITE_ONLY).returncode == 0
    with sqlite3.connect(store) as gem:
        columns = {line[1] for line in gem.execute("PRAGMA table_info(gem_workingmemory)")}
        triggers_back = gem.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' "
            "AND tbl_name = 'gem_workingmemory' ORDER BY name"
        ).fetchall()
    assert "semantic_hash" not in columns and triggers_back == triggers_before


@pytest.mark.store_free
def test_the_hidden_column_comes_in_place_keeping_the_triggers(
    manage, tmp_path, sqlite_stores_copy
):
    sqlite_stores_copy(tmp_path / "data")
    assert manage("migrate", "gem", "0012", env=SQLITE_ONLY).returncode == 0
    store = tmp_path / "data" / "silentstar.sqlite3"
    triggers = (
        "SELECT name FROM sqlite_master WHERE type = 'trigger' "
        "AND tbl_name = 'gem_workingmemory' ORDER BY name"
    )
    with sqlite3.connect(store) as gem:
        triggers_before = gem.execute(triggers).fetchall()

    migrated = manage("migrate", "gem", env=SQLITE_ONLY)

    assert migrated.returncode == 0, migrated.stderr
    with sqlite3.connect(store) as gem:
        columns = {line[1] for line in gem.execute("PRAGMA table_info(gem_workingmemory)")}
        assert gem.execute(triggers).fetchall() == triggers_before
    assert "hidden" in columns and len(triggers_before) == 7
