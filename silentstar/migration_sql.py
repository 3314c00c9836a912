"""Raw SQL in migrations: each backend runs its own statements."""

from collections.abc import Callable


def by_vendor(statements: dict[str, list[str]], *, what: str) -> Callable:
    """A ``RunPython`` function that runs ``statements[vendor]`` for the migrated database's
    backend, and refuses a backend it has none for, naming ``what`` it would have made."""

    def run(apps, schema_editor):
        vendor = schema_editor.connection.vendor
        if vendor not in statements:
            raise RuntimeError(f"No {what} for the {vendor} backend")
        for statement in statements[vendor]:
            schema_editor.execute(statement, params=None)

    return run
