"""The record a restore or import keeps while it changes the installation (``transfer.undo``):
read by the system check at every start, so it imports nothing but the settings."""

import json
from pathlib import Path

from django.conf import settings

UNDO_DIR = "transfer-undo"
RUN_FILE = "run.json"


def undo_folder() -> Path:
    return settings.DATA_DIR / UNDO_DIR


def stopped_run() -> dict | None:
    """What a restore or import that stopped part-way was doing (``what``, ``source``,
    ``started``), or None when none did."""
    path = undo_folder() / RUN_FILE
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text())
    except ValueError:
        # Written whole or not at all (a rename), so only a hand can have damaged it.
        return {"what": "restore or import", "source": "?", "started": "?"}
