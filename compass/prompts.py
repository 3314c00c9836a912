"""The Compass's instructions: the newest saved ``CompassPrompt`` of a kind (the owner edits
them in the Anvil), else the shipped default in ``compass/defaults/``."""

from pathlib import Path

from compass.models import CompassPrompt
from gem.selectors import newest_version

DEFAULTS = Path(__file__).resolve().parent / "defaults"


def prompt_current(kind: str) -> str:
    latest = newest_version(CompassPrompt, kind=kind)
    if latest is not None:
        return latest.content
    return (DEFAULTS / f"{kind}.md").read_text(encoding="utf-8")
