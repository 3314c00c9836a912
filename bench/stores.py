"""Where the benchmarks' throwaway SQLite stores start from."""

import os
import sqlite3
from contextlib import closing
from pathlib import Path

from django.conf import settings

MIGRATED = "SILENTSTAR_BENCH_STORES"


class StoresMissing(RuntimeError):
    """``SILENTSTAR_BENCH_STORES`` names a folder without every store."""


def stores_start(data_dir: Path) -> None:
    """The throwaway SQLite stores in ``data_dir`` as copies of those in
    ``SILENTSTAR_BENCH_STORES``, when it names a folder of stores ``manage.py migrate`` made:
    the run's own migration then has nothing left to do (or only what they lack) instead of
    spending seconds on every migration. Nothing when it is unset."""
    folder = os.environ.get(MIGRATED, "")
    if not folder:
        return
    for name in settings.SQLITE_FILES.values():
        if not (Path(folder) / name).is_file():
            raise StoresMissing(f"{MIGRATED}: {folder} has no {name}")
        with (
            closing(sqlite3.connect(Path(folder) / name)) as store,
            closing(sqlite3.connect(data_dir / name)) as copy,
        ):
            store.backup(copy)
