"""The archive's files, through Django's storage API (``storages["archive"]``): the layout, the
index, and reading archived rows back. Writes nothing to the database: the Lens reads the
archive through this module, and ``gem.archive`` moves items in and out.

Layout (seed 003's structure; docs/archive.md has an example)::

    by-date/YYYY/MM/YYYY-MM-DD.jsonl   the lines: one ``gem.rows.working_memory_row`` each
    by-type/<type>.json                ids of the archived items of that type
    by-tag/<tag>.json                  ids by status and by each fragment key the item names
    index/master-index.json            every archived id → its file, line and what it is
    index/semantic-hashes.json         semantic hash → archived ids, for deduplication

Each line is written once, in ``by-date``. ``by-type`` and ``by-tag`` are lists of ids derived
from the master index, not copies of the lines: three copies would triple the archive and could
disagree, and a reader finds the line through the master index either way.

A storage cannot append or rename, so files are never rewritten in place: a run writes one new
file per day (a second run's file for the same day gets a name the storage picks beside it),
and lines stay where they were written. The master index is the truth: a line it does not list
(restored since, or written by a run that stopped before its index) is not in the archive.
"""

import json
from collections import defaultdict
from datetime import date

from django.core.files.base import ContentFile
from django.core.files.storage import Storage, storages

INDEX = "index/master-index.json"
# The master index is written here first: a storage cannot replace a file, so for a moment
# between removing the old index and saving the new one only this copy exists.
INDEX_NEXT = "index/master-index.next.json"
HASHES = "index/semantic-hashes.json"
BY_DATE, BY_TYPE, BY_TAG = "by-date", "by-type", "by-tag"

# An entry's state: "archived"; "moving" while its rows are removed from the database;
# "restoring" while they are written back (gem.archive finishes either after a crash).
ARCHIVED, MOVING, RESTORING = "archived", "moving", "restoring"


class ArchiveError(ValueError):
    """Something in the archive that cannot be read or done, and what."""


def archive_storage() -> Storage:
    return storages["archive"]


def _json_read(storage: Storage, name: str):
    with storage.open(name, "rb") as file:
        try:
            return json.loads(file.read().decode())
        except ValueError as error:
            raise ArchiveError(f"{name} in the archive is not valid JSON: {error}") from error


def _json_write(storage: Storage, name: str, value) -> None:
    if storage.exists(name):
        storage.delete(name)
    saved = storage.save(name, ContentFile(json.dumps(value, indent=1, sort_keys=True).encode()))
    if saved != name:
        raise ArchiveError(f"{name} could not be written in the archive (got {saved})")


def index_read(storage: Storage) -> dict[int, dict]:
    """The master index: archived id → entry (``file``, ``line``, ``day``, ``type``, …)."""
    for name in (INDEX, INDEX_NEXT):
        if storage.exists(name):
            return {int(key): entry for key, entry in _json_read(storage, name).items()}
    return {}


def index_write(storage: Storage, entries: dict[int, dict]) -> None:
    """Write the master index (by way of ``INDEX_NEXT``) and the files derived from it."""
    encoded = {str(key): entries[key] for key in sorted(entries)}
    _json_write(storage, INDEX_NEXT, encoded)
    _json_write(storage, INDEX, encoded)
    storage.delete(INDEX_NEXT)
    archived = {key: entry for key, entry in entries.items() if entry["state"] == ARCHIVED}
    hashes, by_type, by_tag = defaultdict(list), defaultdict(list), defaultdict(list)
    for key in sorted(archived):
        entry = archived[key]
        hashes[entry["semantic_hash"]].append(key)
        by_type[entry["type"]].append(key)
        for tag in (entry["status"], *entry["fragments"]):
            by_tag[tag].append(key)
    _json_write(storage, HASHES, hashes)
    for folder, lists in ((BY_TYPE, by_type), (BY_TAG, by_tag)):
        for stale in _files(storage, folder) - {f"{name}.json" for name in lists}:
            storage.delete(f"{folder}/{stale}")
        for name, ids in lists.items():
            _json_write(storage, f"{folder}/{name}.json", ids)


def _files(storage: Storage, folder: str) -> set[str]:
    return set(storage.listdir(folder)[1]) if storage.exists(folder) else set()


def index_entry(row: dict, *, file: str, line: int, day: date, archived_at: str) -> dict:
    return {
        "file": file,
        "line": line,
        "day": day.isoformat(),
        "type": row["type"],
        "status": row["status"],
        "fragments": row["fragments"],
        "semantic_hash": row["semantic_hash"],
        "archived_at": archived_at,
        "state": MOVING,
    }


def entries_matching(
    entries: dict[int, dict],
    *,
    ids: set[int] | None = None,
    since: date | None = None,
    until: date | None = None,
    type: str | None = None,
    semantic_hash: str | None = None,
) -> dict[int, dict]:
    """The archived entries (not those on their way) that every given filter lets through:
    ``since``/``until`` on the day of the item's ``by-date`` file (``until`` not included)."""
    return {
        key: entry
        for key, entry in entries.items()
        if entry["state"] == ARCHIVED
        and (ids is None or key in ids)
        and (since is None or entry["day"] >= since.isoformat())
        and (until is None or entry["day"] < until.isoformat())
        and (type is None or entry["type"] == type)
        and (semantic_hash is None or entry["semantic_hash"] == semantic_hash)
    }


def line(row: dict) -> str:
    """A row as its line in the archive (its length in bytes is the item's size)."""
    return json.dumps(row, ensure_ascii=False) + "\n"


def lines_write(storage: Storage, day: date, rows: list[dict]) -> str:
    """Save ``rows`` as a new JSONL file for ``day``; return the name the storage gave it."""
    name = f"{BY_DATE}/{day:%Y}/{day:%m}/{day.isoformat()}.jsonl"
    text = "".join(line(row) for row in rows)
    return storage.save(name, ContentFile(text.encode()))


def lines_read(storage: Storage, name: str) -> list[dict]:
    with storage.open(name, "rb") as file:
        text = file.read().decode()
    try:
        return [json.loads(line) for line in text.splitlines()]
    except ValueError as error:
        raise ArchiveError(f"{name} in the archive has a line that is not JSON: {error}") from error


def archived_rows(storage: Storage, entries: dict[int, dict]) -> dict[int, dict]:
    """The archived lines of ``entries``, by id, reading each file once."""
    by_file = defaultdict(list)
    for key, entry in entries.items():
        by_file[entry["file"]].append((key, entry["line"]))
    rows = {}
    for name, wanted in by_file.items():
        lines = lines_read(storage, name)
        for key, line in wanted:
            if line >= len(lines) or lines[line]["id"] != key:
                raise ArchiveError(f"{name} in the archive has no line {line} for item {key}")
            rows[key] = lines[line]
    return rows


def archive_read() -> dict[int, dict]:
    """Every item in the archive (not those on their way in or out), as rows by id."""
    storage = archive_storage()
    entries = index_read(storage)
    return archived_rows(
        storage, {key: entry for key, entry in entries.items() if entry["state"] == ARCHIVED}
    )
