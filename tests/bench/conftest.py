"""The benchmarks' tests: the small dataset, made by the generator as each test needs it, and
``python -m bench`` in a new process."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.generate import DATASETS, dataset, dataset_write
from tests.conftest import REPO


@pytest.fixture
def small() -> dict:
    """The small dataset, a fresh copy for each test to change (making it takes milliseconds)."""
    return dataset(**DATASETS["small"])


@pytest.fixture
def small_path(tmp_path) -> Path:
    """The small dataset written to a file, as ``python -m bench generate small`` writes it."""
    dataset_write("small", directory=tmp_path)
    return tmp_path / "small.json"


@pytest.fixture
def bench(tmp_path, sqlite_stores_migrated):
    """Run ``python -m bench`` in a fresh process on a throwaway data folder, its throwaway
    stores copies of those the run migrated once (``SILENTSTAR_BENCH_STORES``)."""

    def run(*args: str) -> subprocess.CompletedProcess:
        env = {
            **os.environ,
            "SILENTSTAR_DATA_DIR": str(tmp_path / "data"),
            "SILENTSTAR_BENCH_STORES": str(sqlite_stores_migrated),
        }
        return subprocess.run(
            [sys.executable, "-m", "bench", *args],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    return run
