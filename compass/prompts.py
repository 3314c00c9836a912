"""The Compass's instructions: the newest saved ``CompassPrompt`` of a kind (the owner edits
them in the Anvil), else the shipped default in ``compass/defaults/``."""

from pathlib import Path

from compass.models import CompassPrompt
from gem.selectors import agent_prompt

DEFAULTS = Path(__file__).resolve().parent / "defaults"


def prompt_current(kind: str) -> str:
    return agent_prompt(CompassPrompt, kind=kind, defaults=DEFAULTS).text
