"""The Gem's migrations on a new store and on one that already holds working memory."""

import json
import sqlite3

import pytest

from gem.meaning import semantic_hash
from tests.conftest import REPO
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


FRAGMENT_TRIGGERS = (
    "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'gem_fragment' "
    "ORDER BY name"
)


@pytest.mark.store_free
def test_case_twins_are_renamed_apart_with_everything_that_names_them(
    manage, tmp_path, sqlite_stores_copy
):
    sqlite_stores_copy(tmp_path / "data")
    assert manage("migrate", "gem", "0015", env=SQLITE_ONLY).returncode == 0
    store = tmp_path / "data" / "silentstar.sqlite3"
    with sqlite3.connect(store) as gem:
        triggers_before = gem.execute(FRAGMENT_TRIGGERS).fetchall()
        gem.executemany(
            "INSERT INTO gem_fragment (key, ambient, recognition, inventory, created_at, "
            "updated_at, triggers) VALUES (?, ?, '', '', ?, ?, ?)",
            [
                ("biscuit", "The cat.", "2026-01-01 00:00:00", "2026-01-01 00:00:00", "[]"),
                (
                    "Biscuit",
                    "Also the cat.",
                    "2026-02-01 00:00:00",
                    "2026-02-01 00:00:00",
                    '["kitten"]',
                ),
                ("BISCUIT", "Loud cat.", "2026-02-01 00:00:00", "2026-02-01 00:00:00", "[]"),
                ("biscuit-2", "Second cat.", "2026-03-01 00:00:00", "2026-03-01 00:00:00", "[]"),
                ("moon", "", "2026-01-01 00:00:00", "2026-01-01 00:00:00", "[]"),
            ],
        )
        gem.executemany(
            "INSERT INTO gem_fragmentedge (source_id, target_id, relation) VALUES (?, ?, ?)",
            [
                ("Biscuit", "moon", "sleeps under"),
                ("moon", "Biscuit", "lights"),
                ("biscuit", "BISCUIT", "louder"),
            ],
        )
        gem.execute("INSERT INTO gem_fragmentsource (fragment_id, event_id) VALUES ('Biscuit', 7)")
        gem.execute(
            "INSERT INTO gem_workingmemory (type, content, subject, actor, status, created_at, "
            "refreshed_at, importance, valence) VALUES ('pin', 'feed [Biscuit]', '', 'luna', "
            "'active', '2026-01-01 00:00:00', '2026-01-01 00:00:00', 0.5, 0)"
        )
        gem.execute(
            "INSERT INTO gem_workingmemoryref (wm_id, fragment_id) "
            "VALUES ((SELECT max(id) FROM gem_workingmemory), 'Biscuit')"
        )
        gem.execute(
            "INSERT INTO loom_session (topic, status, created_at, updated_at) "
            "VALUES ('cats', 'open', '2026-01-01 00:00:00', '2026-01-01 00:00:00')"
        )
        gem.execute(
            "INSERT INTO loom_session_fragments (session_id, fragment_id) "
            "VALUES ((SELECT max(id) FROM loom_session), 'BISCUIT')"
        )
        gem.execute(
            "INSERT INTO gem_ambientprose (content, created_at) "
            "VALUES ('[biscuit] and [Biscuit] and [BISCUIT] under the [moon]', "
            "'2026-01-01 00:00:00')"
        )
        counts_before = [
            gem.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in (
                "gem_fragment",
                "gem_fragmentedge",
                "gem_fragmentsource",
                "gem_workingmemoryref",
                "loom_session_fragments",
            )
        ]

    migrated = manage("migrate", "gem", env=SQLITE_ONLY)

    assert migrated.returncode == 0, migrated.stderr
    with sqlite3.connect(store) as gem:
        fragments = gem.execute(
            "SELECT key, key_folded, ambient, triggers, created_at FROM gem_fragment ORDER BY key"
        ).fetchall()
        edges = set(gem.execute("SELECT source_id, target_id, relation FROM gem_fragmentedge"))
        source = gem.execute("SELECT fragment_id, event_id FROM gem_fragmentsource").fetchall()
        ref = gem.execute("SELECT fragment_id FROM gem_workingmemoryref").fetchall()
        loom = gem.execute("SELECT fragment_id FROM loom_session_fragments").fetchall()
        prose = gem.execute(
            "SELECT content FROM gem_ambientprose ORDER BY created_at DESC, id DESC"
        ).fetchall()
        twins = gem.execute("SELECT value FROM gem_state WHERE key = 'case_twins'").fetchone()
        counts_after = [
            gem.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in (
                "gem_fragment",
                "gem_fragmentedge",
                "gem_fragmentsource",
                "gem_workingmemoryref",
                "loom_session_fragments",
            )
        ]
        assert gem.execute(FRAGMENT_TRIGGERS).fetchall() == triggers_before
        with pytest.raises(sqlite3.IntegrityError):
            gem.execute(
                "INSERT INTO gem_fragment (key, key_folded, ambient, recognition, inventory, "
                "created_at, updated_at, triggers) VALUES ('Moon', 'moon', '', '', '', "
                "'2026-04-01', '2026-04-01', '[]')"
            )
    assert counts_after == counts_before and len(triggers_before) == 6
    assert [row[:4] for row in fragments] == [
        ("BISCUIT-3", "biscuit-3", "Loud cat.", "[]"),
        ("Biscuit-4", "biscuit-4", "Also the cat.", '["kitten"]'),
        ("biscuit", "biscuit", "The cat.", "[]"),
        ("biscuit-2", "biscuit-2", "Second cat.", "[]"),
        ("moon", "moon", "", "[]"),
    ]
    assert fragments[1][4].startswith("2026-02-01")  # kept when it was made
    assert edges == {
        ("Biscuit-4", "moon", "sleeps under"),
        ("moon", "Biscuit-4", "lights"),
        ("biscuit", "BISCUIT-3", "louder"),
    }
    assert (source, ref, loom) == ([("Biscuit-4", 7)], [("Biscuit-4",)], [("BISCUIT-3",)])
    assert prose[0] == ("[biscuit] and [Biscuit-4] and [BISCUIT-3] under the [moon]",)
    assert json.loads(twins[0]) == [
        {"kept": "biscuit", "renamed": "BISCUIT-3", "was": "BISCUIT"},
        {"kept": "biscuit", "renamed": "Biscuit-4", "was": "Biscuit"},
    ]


IDENTITIES = "SELECT name, side, color FROM gem_identity ORDER BY id"
WAKE_TEXT_TRIGGERS = (
    "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'gem_waketext' "
    "ORDER BY name"
)


@pytest.mark.store_free
def test_a_new_installation_starts_with_no_identities_and_the_shipped_greeting(
    tmp_path, sqlite_stores_copy
):
    sqlite_stores_copy(tmp_path / "data")
    with sqlite3.connect(tmp_path / "data" / "silentstar.sqlite3") as gem:
        assert gem.execute(IDENTITIES).fetchall() == []
        greetings = gem.execute("SELECT content FROM gem_waketext WHERE kind = 'greeting'")
        assert [row[0] for row in greetings] == [
            (REPO / "gem" / "defaults" / "greeting.md").read_text(encoding="utf-8").strip()
        ]
        assert len(gem.execute(WAKE_TEXT_TRIGGERS).fetchall()) == 3


@pytest.mark.store_free
def test_an_installation_from_before_keeps_its_own_identities(manage, tmp_path, sqlite_stores_copy):
    """Its identities were made by the seed once; migrating again (even through the seed's
    migration) neither adds the source documents' back nor touches those it has."""
    sqlite_stores_copy(tmp_path / "data")
    store = tmp_path / "data" / "silentstar.sqlite3"
    own = [
        ("moon", "user", "#223344"),
        ("hasuki", "user", "#c4a0d4"),
        ("sable", "companion", "#8b8ec8"),
    ]
    assert manage("migrate", "gem", "0001", env=SQLITE_ONLY).returncode == 0
    with sqlite3.connect(store) as gem:
        gem.executemany("INSERT INTO gem_identity (name, side, color) VALUES (?, ?, ?)", own)

    migrated = manage("migrate", env=SQLITE_ONLY)

    assert migrated.returncode == 0, migrated.stderr
    with sqlite3.connect(store) as gem:
        assert gem.execute(IDENTITIES).fetchall() == own
        assert len(gem.execute(WAKE_TEXT_TRIGGERS).fetchall()) == 3


@pytest.mark.store_free
def test_the_greeting_comes_and_goes_keeping_the_wake_texts_change_marks(
    manage, tmp_path, sqlite_stores_copy
):
    sqlite_stores_copy(tmp_path / "data")
    store = tmp_path / "data" / "silentstar.sqlite3"
    with sqlite3.connect(store) as gem:
        triggers = gem.execute(WAKE_TEXT_TRIGGERS).fetchall()

    assert manage("migrate", "gem", "0018", env=SQLITE_ONLY).returncode == 0
    with sqlite3.connect(store) as gem:
        assert gem.execute(WAKE_TEXT_TRIGGERS).fetchall() == triggers
        kinds = gem.execute("SELECT DISTINCT kind FROM gem_waketext ORDER BY kind").fetchall()
        assert kinds == [("image",), ("wake",)]
        seq = gem.execute("SELECT seq FROM gem_change WHERE source = 'gem_waketext'").fetchone()
        gem.execute("UPDATE gem_waketext SET content = content || '.' WHERE kind = 'wake'")
        assert (
            gem.execute("SELECT seq FROM gem_change WHERE source = 'gem_waketext'").fetchone() > seq
        )
    assert manage("migrate", "gem", env=SQLITE_ONLY).returncode == 0
    with sqlite3.connect(store) as gem:
        assert gem.execute(WAKE_TEXT_TRIGGERS).fetchall() == triggers and len(triggers) == 3
        assert gem.execute(
            "SELECT count(*) FROM gem_waketext WHERE kind = 'greeting'"
        ).fetchone() == (1,)
