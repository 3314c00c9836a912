"""Full-text indexes for the Lens's search, kept in step with their tables by triggers.

SQLite: FTS5 tables with the Porter stemmer. PostgreSQL: side tables holding a weighted
``tsvector`` under a GIN index. Each index lives in the store of the table it indexes — events
in ``events``, fragments and working memory in ``default`` — so each operation names its store
(the router's ``store`` hint) and runs once per physical database.

The event log is append-only: its index is written by an insert trigger and never by changing
an event. An event is indexed with its speaker, its date in words (UTC) and, as context, the two
events before it, so a turn that answers a question is found by the question's words too.
Fragments and working memory are re-indexed by their insert, update and delete triggers. Rows
that exist when the migration runs are indexed by it.
"""

from django.db import migrations

from silentstar.migration_sql import by_vendor

TOKENIZER = "porter unicode61 remove_diacritics 2"

# --- SQLite ---------------------------------------------------------------------------------


def _sqlite_date_words(ts: str) -> str:
    """``Monday 8 May 2023 afternoon`` from a stored (UTC) timestamp, in SQL."""
    weekdays = " ".join(
        f"WHEN {n} THEN '{day}'"
        for n, day in enumerate(
            ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
        )
    )
    months = " ".join(
        f"WHEN {n} THEN '{month}'"
        for n, month in enumerate(
            (
                "January February March April May June July August September October "
                "November December"
            ).split(),
            start=1,
        )
    )
    return (
        f"(CASE CAST(strftime('%w', {ts}) AS INTEGER) {weekdays} END) || ' ' || "
        f"CAST(strftime('%d', {ts}) AS INTEGER) || ' ' || "
        f"(CASE CAST(strftime('%m', {ts}) AS INTEGER) {months} END) || ' ' || "
        f"strftime('%Y', {ts}) || ' ' || "
        f"(CASE WHEN CAST(strftime('%H', {ts}) AS INTEGER) BETWEEN 5 AND 11 THEN 'morning' "
        f"WHEN CAST(strftime('%H', {ts}) AS INTEGER) BETWEEN 12 AND 17 THEN 'afternoon' "
        f"WHEN CAST(strftime('%H', {ts}) AS INTEGER) BETWEEN 18 AND 21 THEN 'evening' "
        f"ELSE 'night' END)"
    )


def _sqlite_before(event_id: str) -> str:
    return (
        "coalesce((SELECT group_concat(content, ' ') FROM (SELECT content FROM heart_event "
        f"WHERE id < {event_id} ORDER BY id DESC LIMIT 2)), '')"
    )


SQLITE_EVENTS = [
    "CREATE VIRTUAL TABLE lens_event_fts USING fts5("
    f"content, speaker, dated, context, tokenize='{TOKENIZER}')",
    "CREATE TRIGGER lens_event_fts_insert AFTER INSERT ON heart_event BEGIN "
    "INSERT INTO lens_event_fts(rowid, content, speaker, dated, context) VALUES ("
    f"new.id, new.content, new.actor, {_sqlite_date_words('new.ts')}, "
    f"{_sqlite_before('new.id')}); END",
    "INSERT INTO lens_event_fts(rowid, content, speaker, dated, context) "
    f"SELECT e.id, e.content, e.actor, {_sqlite_date_words('e.ts')}, {_sqlite_before('e.id')} "
    "FROM heart_event e",
]
SQLITE_EVENTS_DROP = [
    "DROP TRIGGER IF EXISTS lens_event_fts_insert",
    "DROP TABLE IF EXISTS lens_event_fts",
]

SQLITE_GEM = [
    "CREATE VIRTUAL TABLE lens_fragment_fts USING fts5("
    f"key, ambient, recognition, inventory, tokenize='{TOKENIZER}')",
    "CREATE TRIGGER lens_fragment_fts_insert AFTER INSERT ON gem_fragment BEGIN "
    "INSERT INTO lens_fragment_fts(key, ambient, recognition, inventory) "
    "VALUES (new.key, new.ambient, new.recognition, new.inventory); END",
    "CREATE TRIGGER lens_fragment_fts_update AFTER UPDATE ON gem_fragment BEGIN "
    "DELETE FROM lens_fragment_fts WHERE key = old.key; "
    "INSERT INTO lens_fragment_fts(key, ambient, recognition, inventory) "
    "VALUES (new.key, new.ambient, new.recognition, new.inventory); END",
    "CREATE TRIGGER lens_fragment_fts_delete AFTER DELETE ON gem_fragment BEGIN "
    "DELETE FROM lens_fragment_fts WHERE key = old.key; END",
    "INSERT INTO lens_fragment_fts(key, ambient, recognition, inventory) "
    "SELECT key, ambient, recognition, inventory FROM gem_fragment",
    "CREATE VIRTUAL TABLE lens_wm_fts USING fts5("
    f"content, subject, type, tokenize='{TOKENIZER}')",
    "CREATE TRIGGER lens_wm_fts_insert AFTER INSERT ON gem_workingmemory BEGIN "
    "INSERT INTO lens_wm_fts(rowid, content, subject, type) "
    "VALUES (new.id, new.content, new.subject, new.type); END",
    "CREATE TRIGGER lens_wm_fts_update AFTER UPDATE OF content, subject, type "
    "ON gem_workingmemory BEGIN "
    "DELETE FROM lens_wm_fts WHERE rowid = old.id; "
    "INSERT INTO lens_wm_fts(rowid, content, subject, type) "
    "VALUES (new.id, new.content, new.subject, new.type); END",
    "CREATE TRIGGER lens_wm_fts_delete AFTER DELETE ON gem_workingmemory BEGIN "
    "DELETE FROM lens_wm_fts WHERE rowid = old.id; END",
    "INSERT INTO lens_wm_fts(rowid, content, subject, type) "
    "SELECT id, content, subject, type FROM gem_workingmemory",
]
SQLITE_GEM_DROP = [
    "DROP TRIGGER IF EXISTS lens_fragment_fts_insert",
    "DROP TRIGGER IF EXISTS lens_fragment_fts_update",
    "DROP TRIGGER IF EXISTS lens_fragment_fts_delete",
    "DROP TABLE IF EXISTS lens_fragment_fts",
    "DROP TRIGGER IF EXISTS lens_wm_fts_insert",
    "DROP TRIGGER IF EXISTS lens_wm_fts_update",
    "DROP TRIGGER IF EXISTS lens_wm_fts_delete",
    "DROP TABLE IF EXISTS lens_wm_fts",
]

# --- PostgreSQL -----------------------------------------------------------------------------
# Weights: A the text itself, B who and when, C the context. The search reads them with
# its own rank weights.

POSTGRES_EVENTS = [
    """
    CREATE FUNCTION lens_event_document(content text, actor text, ts timestamptz, before text)
    RETURNS tsvector AS $$
      SELECT setweight(to_tsvector('english', content), 'A')
        || setweight(to_tsvector('english', actor), 'B')
        || setweight(to_tsvector('english',
             to_char(ts AT TIME ZONE 'UTC', 'FMDay FMDD FMMonth YYYY') || ' ' ||
             CASE WHEN extract(hour FROM ts AT TIME ZONE 'UTC') BETWEEN 5 AND 11 THEN 'morning'
                  WHEN extract(hour FROM ts AT TIME ZONE 'UTC') BETWEEN 12 AND 17 THEN 'afternoon'
                  WHEN extract(hour FROM ts AT TIME ZONE 'UTC') BETWEEN 18 AND 21 THEN 'evening'
                  ELSE 'night' END), 'B')
        || setweight(to_tsvector('english', before), 'C')
    $$ LANGUAGE sql IMMUTABLE
    """,
    """
    CREATE FUNCTION lens_event_before(event_id bigint) RETURNS text AS $$
      SELECT coalesce(string_agg(content, ' '), '') FROM (
        SELECT content FROM heart_event WHERE id < event_id ORDER BY id DESC LIMIT 2
      ) AS before
    $$ LANGUAGE sql STABLE
    """,
    "CREATE TABLE lens_event_index (event_id bigint PRIMARY KEY, document tsvector NOT NULL)",
    "CREATE INDEX lens_event_index_document ON lens_event_index USING GIN (document)",
    """
    CREATE FUNCTION lens_event_index_insert() RETURNS trigger AS $$
    BEGIN
      INSERT INTO lens_event_index (event_id, document) VALUES (
        NEW.id,
        lens_event_document(NEW.content, NEW.actor, NEW.ts, lens_event_before(NEW.id))
      );
      RETURN NULL;
    END;
    $$ LANGUAGE plpgsql
    """,
    "CREATE TRIGGER lens_event_index_insert AFTER INSERT ON heart_event "
    "FOR EACH ROW EXECUTE FUNCTION lens_event_index_insert()",
    "INSERT INTO lens_event_index (event_id, document) "
    "SELECT id, lens_event_document(content, actor, ts, lens_event_before(id)) FROM heart_event",
]
POSTGRES_EVENTS_DROP = [
    "DROP TRIGGER IF EXISTS lens_event_index_insert ON heart_event",
    "DROP FUNCTION IF EXISTS lens_event_index_insert()",
    "DROP TABLE IF EXISTS lens_event_index",
    "DROP FUNCTION IF EXISTS lens_event_before(bigint)",
    "DROP FUNCTION IF EXISTS lens_event_document(text, text, timestamptz, text)",
]

POSTGRES_GEM = [
    "CREATE TABLE lens_fragment_index (key varchar(100) PRIMARY KEY, document tsvector NOT NULL)",
    "CREATE INDEX lens_fragment_index_document ON lens_fragment_index USING GIN (document)",
    """
    CREATE FUNCTION lens_fragment_document(key text, ambient text, recognition text,
                                           inventory text) RETURNS tsvector AS $$
      SELECT setweight(to_tsvector('english', replace(key, '-', ' ')), 'A')
        || setweight(to_tsvector('english', ambient), 'A')
        || setweight(to_tsvector('english', recognition), 'B')
        || setweight(to_tsvector('english', inventory), 'C')
    $$ LANGUAGE sql IMMUTABLE
    """,
    """
    CREATE FUNCTION lens_fragment_index_sync() RETURNS trigger AS $$
    BEGIN
      IF TG_OP IN ('UPDATE', 'DELETE') THEN
        DELETE FROM lens_fragment_index WHERE key = OLD.key;
      END IF;
      IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO lens_fragment_index (key, document) VALUES (NEW.key,
          lens_fragment_document(NEW.key, NEW.ambient, NEW.recognition, NEW.inventory));
      END IF;
      RETURN NULL;
    END;
    $$ LANGUAGE plpgsql
    """,
    "CREATE TRIGGER lens_fragment_index_sync AFTER INSERT OR UPDATE OR DELETE ON gem_fragment "
    "FOR EACH ROW EXECUTE FUNCTION lens_fragment_index_sync()",
    "INSERT INTO lens_fragment_index (key, document) "
    "SELECT key, lens_fragment_document(key, ambient, recognition, inventory) FROM gem_fragment",
    "CREATE TABLE lens_wm_index (wm_id bigint PRIMARY KEY, document tsvector NOT NULL)",
    "CREATE INDEX lens_wm_index_document ON lens_wm_index USING GIN (document)",
    """
    CREATE FUNCTION lens_wm_document(content text, subject text, type text)
    RETURNS tsvector AS $$
      SELECT setweight(to_tsvector('english', content), 'A')
        || setweight(to_tsvector('english', subject), 'B')
        || setweight(to_tsvector('english', type), 'D')
    $$ LANGUAGE sql IMMUTABLE
    """,
    """
    CREATE FUNCTION lens_wm_index_sync() RETURNS trigger AS $$
    BEGIN
      IF TG_OP = 'UPDATE' AND NEW.content IS NOT DISTINCT FROM OLD.content
         AND NEW.subject IS NOT DISTINCT FROM OLD.subject AND NEW.type = OLD.type THEN
        RETURN NULL;  -- status and decay changes leave the text as it was
      END IF;
      IF TG_OP IN ('UPDATE', 'DELETE') THEN
        DELETE FROM lens_wm_index WHERE wm_id = OLD.id;
      END IF;
      IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO lens_wm_index (wm_id, document)
        VALUES (NEW.id, lens_wm_document(NEW.content, NEW.subject, NEW.type));
      END IF;
      RETURN NULL;
    END;
    $$ LANGUAGE plpgsql
    """,
    "CREATE TRIGGER lens_wm_index_sync AFTER INSERT OR UPDATE OR DELETE ON gem_workingmemory "
    "FOR EACH ROW EXECUTE FUNCTION lens_wm_index_sync()",
    "INSERT INTO lens_wm_index (wm_id, document) "
    "SELECT id, lens_wm_document(content, subject, type) FROM gem_workingmemory",
]
POSTGRES_GEM_DROP = [
    "DROP TRIGGER IF EXISTS lens_fragment_index_sync ON gem_fragment",
    "DROP FUNCTION IF EXISTS lens_fragment_index_sync()",
    "DROP TABLE IF EXISTS lens_fragment_index",
    "DROP FUNCTION IF EXISTS lens_fragment_document(text, text, text, text)",
    "DROP TRIGGER IF EXISTS lens_wm_index_sync ON gem_workingmemory",
    "DROP FUNCTION IF EXISTS lens_wm_index_sync()",
    "DROP TABLE IF EXISTS lens_wm_index",
    "DROP FUNCTION IF EXISTS lens_wm_document(text, text, text)",
]


WHAT = "full-text search indexes"


class Migration(migrations.Migration):
    dependencies = [
        ("heart", "0002_event_log_append_only"),
        ("gem", "0006_working_memory_importance_valence"),
    ]

    operations = [
        migrations.RunPython(
            by_vendor({"sqlite": SQLITE_EVENTS, "postgresql": POSTGRES_EVENTS}, what=WHAT),
            by_vendor({"sqlite": SQLITE_EVENTS_DROP, "postgresql": POSTGRES_EVENTS_DROP}, what=WHAT),
            hints={"store": "events"},
        ),
        migrations.RunPython(
            by_vendor({"sqlite": SQLITE_GEM, "postgresql": POSTGRES_GEM}, what=WHAT),
            by_vendor({"sqlite": SQLITE_GEM_DROP, "postgresql": POSTGRES_GEM_DROP}, what=WHAT),
            hints={"store": "default"},
        ),
    ]
