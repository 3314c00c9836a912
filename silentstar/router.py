"""Sends each model to its store (database alias) — the four-store split of schema v5.

The event log lives in ``events``, context snapshots in ``snapshots``, the Mirror's
output in ``summaries``, everything else (the Gem, auth, the task queue) in ``default``.
No relation crosses a store: cross-store references are plain integer ids.
"""

from django.conf import settings

# (app_label, model_name or None for the whole app) -> alias
STORE_OF = {
    ("heart", "contextsnapshot"): "snapshots",
    ("heart", None): "events",
    ("mirror", None): "summaries",
}


def store_for(app_label: str, model_name: str | None = None) -> str:
    """The alias a model (or, without a model name, an app) belongs to."""
    return STORE_OF.get((app_label, model_name)) or STORE_OF.get((app_label, None), "default")


def same_database(alias: str, other: str) -> bool:
    """Whether two aliases are configured to reach one physical database."""
    return settings.STORE_LOCATIONS[alias] == settings.STORE_LOCATIONS[other]


class StoreRouter:
    def db_for_read(self, model, **hints):
        return store_for(model._meta.app_label, model._meta.model_name)

    def db_for_write(self, model, **hints):
        return store_for(model._meta.app_label, model._meta.model_name)

    def allow_relation(self, obj1, obj2, **hints):
        home1 = store_for(obj1._meta.app_label, obj1._meta.model_name)
        home2 = store_for(obj2._meta.app_label, obj2._meta.model_name)
        return home1 == home2

    def allow_migrate(self, db, app_label, model_name=None, store=None, **hints):
        # When several aliases share one database, a model is created by whichever
        # alias migrates first; the others then find its migration already applied.
        # A raw-SQL operation on another app's tables names their store with the hint
        # ``store`` (the Lens's search indexes live beside the tables they index).
        return same_database(db, store or store_for(app_label, model_name))
