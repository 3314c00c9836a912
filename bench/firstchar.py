"""``python -m bench firstchar``: from the first streamed token to the first visible character."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

FIRST_CHAR_TEST = "tests/bench/browser/test_firstchar.py"
FIRST_CHAR_MARK = "FIRSTCHAR "


def first_char_measure(*, runs: int, base_dir: Path) -> dict:
    """Time from the first streamed token to the first visible character, in Chromium.

    It takes a browser, a live server and a fake Messages API, which the browser tests already
    have, so this runs their benchmark (``FIRST_CHAR_TEST``, skipped in ordinary test runs) in
    a pytest process of its own and reads the figures it prints. Needs the development
    requirements (pytest-django, Playwright) and Debian's Chromium headless shell.
    """
    missing = [name for name in ("pytest", "pytest_django", "playwright") if not _importable(name)]
    if missing:
        raise RuntimeError(
            "python -m bench firstchar needs the development requirements "
            f"({', '.join(missing)} missing): pip install -r requirements-dev.txt, "
            "and Chromium's headless shell (apt-get install -y chromium-headless-shell)"
        )
    env = {
        **os.environ,
        "SILENTSTAR_BENCH_FIRSTCHAR": "1",
        "SILENTSTAR_BENCH_RUNS": str(runs),
        "SILENTSTAR_LOG_LEVEL": "WARNING",
    }
    command = [sys.executable, "-m", "pytest", FIRST_CHAR_TEST, "-q", "-s"]
    done = subprocess.run(command, cwd=base_dir, env=env, stdout=subprocess.PIPE, text=True)
    lines = done.stdout.splitlines()
    figures = [line for line in lines if line.startswith(FIRST_CHAR_MARK)]
    if done.returncode != 0 or not figures:
        tail = "\n".join(lines[-30:])
        raise RuntimeError(f"the browser benchmark did not run ({' '.join(command)}):\n{tail}")
    return json.loads(figures[-1].removeprefix(FIRST_CHAR_MARK))


def _importable(name: str) -> bool:
    return importlib.util.find_spec(name) is not None
