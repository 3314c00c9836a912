"""A full-text index of the Mirror's summaries, in the summaries store beside them.

As the other indexes of 0001: on SQLite an FTS5 table with the Porter stemmer, on PostgreSQL a
side table holding a ``tsvector`` under a GIN index (emptied with its table by a TRUNCATE, as
0002 does for the others). Insert, update and delete triggers keep it in step, re-indexing a
summary only when its text changes: a rebuild marks the summaries it replaces by setting
``superseded_by``, which the search reads from the table itself. The summaries that exist when
the migration runs are indexed by it.

SQLite drops the triggers on a table it copies, as its schema editor does for most changes to a
column: a later migration of ``mirror_summary`` must change it in place (as the Gem's
``AddFieldInPlace`` does) or make these triggers again.
"""

from django.db import migrations

from silentstar.migration_sql import by_vendor

TOKENIZER = "porter unicode61 remove_diacritics 2"

SQLITE = [
    f"CREATE VIRTUAL TABLE lens_summary_fts USING fts5(content, tokenize='{TOKENIZER}')",
    "CREATE TRIGGER lens_summary_fts_insert AFTER INSERT ON mirror_summary BEGIN "
    "INSERT INTO lens_summary_fts(rowid, content) VALUES (new.id, new.content); END",
    "CREATE TRIGGER lens_summary_fts_update AFTER UPDATE OF content ON mirror_summary BEGIN "
    "DELETE FROM lens_summary_fts WHERE rowid = old.id; "
    "INSERT INTO lens_summary_fts(rowid, content) VALUES (new.id, new.content); END",
    "CREATE TRIGGER lens_summary_fts_delete AFTER DELETE ON mirror_summary BEGIN "
    "DELETE FROM lens_summary_fts WHERE rowid = old.id; END",
    "INSERT INTO lens_summary_fts(rowid, content) SELECT id, content FROM mirror_summary",
]
SQLITE_DROP = [
    "DROP TRIGGER IF EXISTS lens_summary_fts_insert",
    "DROP TRIGGER IF EXISTS lens_summary_fts_update",
    "DROP TRIGGER IF EXISTS lens_summary_fts_delete",
    "DROP TABLE IF EXISTS lens_summary_fts",
]

POSTGRES = [
    "CREATE TABLE lens_summary_index (summary_id bigint PRIMARY KEY, document tsvector NOT NULL)",
    "CREATE INDEX lens_summary_index_document ON lens_summary_index USING GIN (document)",
    """
    CREATE FUNCTION lens_summary_document(content text) RETURNS tsvector AS $$
      SELECT setweight(to_tsvector('english', content), 'A')
    $$ LANGUAGE sql IMMUTABLE
    """,
    """
    CREATE FUNCTION lens_summary_index_sync() RETURNS trigger AS $$
    BEGIN
      IF TG_OP = 'UPDATE' AND NEW.id = OLD.id AND NEW.content = OLD.content THEN
        RETURN NULL;  -- superseding a summary leaves its text as it was
      END IF;
      IF TG_OP IN ('UPDATE', 'DELETE') THEN
        DELETE FROM lens_summary_index WHERE summary_id = OLD.id;
      END IF;
      IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO lens_summary_index (summary_id, document)
        VALUES (NEW.id, lens_summary_document(NEW.content));
      END IF;
      RETURN NULL;
    END;
    $$ LANGUAGE plpgsql
    """,
    "CREATE TRIGGER lens_summary_index_sync AFTER INSERT OR UPDATE OR DELETE ON mirror_summary "
    "FOR EACH ROW EXECUTE FUNCTION lens_summary_index_sync()",
    "CREATE FUNCTION lens_summary_index_truncate() RETURNS trigger AS $$ "
    "BEGIN TRUNCATE lens_summary_index; RETURN NULL; END; $$ LANGUAGE plpgsql",
    "CREATE TRIGGER lens_summary_index_truncate AFTER TRUNCATE ON mirror_summary "
    "FOR EACH STATEMENT EXECUTE FUNCTION lens_summary_index_truncate()",
    "INSERT INTO lens_summary_index (summary_id, document) "
    "SELECT id, lens_summary_document(content) FROM mirror_summary",
]
POSTGRES_DROP = [
    "DROP TRIGGER IF EXISTS lens_summary_index_truncate ON mirror_summary",
    "DROP FUNCTION IF EXISTS lens_summary_index_truncate()",
    "DROP TRIGGER IF EXISTS lens_summary_index_sync ON mirror_summary",
    "DROP FUNCTION IF EXISTS lens_summary_index_sync()",
    "DROP TABLE IF EXISTS lens_summary_index",
    "DROP FUNCTION IF EXISTS lens_summary_document(text)",
]

WHAT = "summary search index"


class Migration(migrations.Migration):
    dependencies = [
        ("lens", "0007_event_vectors_of_one_model"),
        ("mirror", "0006_suggestions_from_imports"),
    ]

    operations = [
        migrations.RunPython(
            by_vendor({"sqlite": SQLITE, "postgresql": POSTGRES}, what=WHAT),
            by_vendor({"sqlite": SQLITE_DROP, "postgresql": POSTGRES_DROP}, what=WHAT),
            hints={"store": "summaries"},
        ),
    ]
