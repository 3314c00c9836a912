"""Sends each model to its store (database alias) — the four-store split of schema v5.

The event log lives in ``events``, with the ledger of calls to Claude beside the turns that
make most of them; context snapshots in ``snapshots``, the Mirror's output in ``summaries`` with
the Compass's consultations (their proposals are suggestions of the Mirror's queue), everything
else (the Gem, the Loom's sessions beside the fragments they work on, auth, the task queue) in
``default``.
No relation crosses a store: cross-store references are plain integer ids.
"""

from django.conf import settings
from django.core.management.color import no_style
from django.db import connections

# (app_label, model_name or None for the whole app) -> alias
STORE_OF = {
    ("heart", "contextsnapshot"): "snapshots",
    ("heart", None): "events",
    ("events", None): "events",
    ("ledger", None): "events",
    ("mirror", None): "summaries",
    ("compass", None): "summaries",
    # What an import from another companion wrote, beside what it wrote (transfer.models).
    ("transfer", "importedmessage"): "events",
    ("transfer", "importedmemory"): "summaries",
}


def store_for(app_label: str, model_name: str | None = None) -> str:
    """The alias a model (or, without a model name, an app) belongs to."""
    return STORE_OF.get((app_label, model_name)) or STORE_OF.get((app_label, None), "default")


def store_of(model) -> str:
    """The alias a model's rows live in."""
    return store_for(model._meta.app_label, model._meta.model_name)


# The largest id an import takes from outside (a legacy file, an export). No companion has
# written two billion messages or memories, and a store's sequence goes on from the highest id
# imported: an id near the sequence's end (2⁶³ − 1) would leave no room for the next row.
ID_MAX = 2**31 - 1


def sequences_reset(models) -> None:
    """Move each model's id sequence past the ids written, in its own store (PostgreSQL: rows
    written with their ids leave the sequence behind; SQLite's follow by themselves)."""
    by_store: dict[str, list] = {}
    for model in models:
        by_store.setdefault(store_of(model), []).append(model)
    for alias, here in by_store.items():
        connection = connections[alias]
        statements = connection.ops.sequence_reset_sql(no_style(), here)
        if statements:
            with connection.cursor() as cursor:
                for statement in statements:
                    cursor.execute(statement)


def same_database(alias: str, other: str) -> bool:
    """Whether two aliases are configured to reach one physical database."""
    return settings.STORE_LOCATIONS[alias] == settings.STORE_LOCATIONS[other]


class StoreRouter:
    def db_for_read(self, model, **hints):
        return store_of(model)

    def db_for_write(self, model, **hints):
        return store_of(model)

    def allow_relation(self, obj1, obj2, **hints):
        return store_of(obj1) == store_of(obj2)

    def allow_migrate(self, db, app_label, model_name=None, store=None, **hints):
        # When several aliases share one database, a model is created by whichever
        # alias migrates first; the others then find its migration already applied.
        # A raw-SQL operation on another app's tables names their store with the hint
        # ``store`` (the Lens's search indexes live beside the tables they index).
        return same_database(db, store or store_for(app_label, model_name))
