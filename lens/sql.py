"""Raw statements of the Lens, read the same way by the search and the semantic ranking."""

from collections.abc import Sequence


def placeholders(values: Sequence) -> str:
    """``%s, %s, …``: one parameter mark a value, for ``IN (…)``."""
    return ", ".join(["%s"] * len(values))


def fetch_all(connection, sql: str, params: list) -> list[tuple]:
    """The rows of one raw statement."""
    with connection.cursor() as cursor:
        return fetch_rows(cursor, sql, params)


def fetch_rows(cursor, sql: str, params: list) -> list[tuple]:
    """The rows of one raw statement, on a cursor already open.

    On SQLite the statement runs on the driver's connection beneath Django's cursor, its ``%s``
    marks made ``?`` here (the statements read through it write no other ``%``), unless something
    watches Django's statements (``DEBUG``'s log, a test counting them, an ``execute_wrapper``):
    Django makes the marks with a regular expression over the whole statement and wraps the
    call, 0.03 ms a statement, a twentieth of a search over 10,000 events, and a search nobody
    watches loses nothing by skipping that. Errors still come as Django's."""
    connection = cursor.db
    if connection.vendor == "sqlite" and not (
        connection.queries_logged or connection.execute_wrappers
    ):
        with connection.wrap_database_errors:
            return connection.connection.execute(sql.replace("%s", "?"), params).fetchall()
    cursor.execute(sql, params)
    return cursor.fetchall()
