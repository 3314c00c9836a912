"""The project's one token estimate, and its calibration from the usage the API reports.

Pure: standard library only, no Django, so the assembler, the Gem, the Mirror and the Claude
client all count tokens the same way.
"""

import math

DEFAULT_CHARS_PER_TOKEN = 4.0  # until calibrated
CALIBRATION_WEIGHT = 0.2  # how far one turn's measurement moves the running figure
CHARS_PER_TOKEN_RANGE = (1.5, 8.0)  # outside this a measurement is taken to be wrong


def estimate_tokens(text: str, chars_per_token: float = DEFAULT_CHARS_PER_TOKEN) -> int:
    """A token per ``chars_per_token`` characters, rounded up; 0 for empty text.

    Four until calibrated from the usage the API reports (``chars_per_token_calibrated``).
    """
    return tokens_for_characters(len(text), chars_per_token)


def tokens_for_characters(characters: int, chars_per_token: float) -> int:
    """The estimate of a text of ``characters`` characters, without the text at hand."""
    return math.ceil(characters / chars_per_token) if characters > 0 else 0


def characters_within(tokens: int, chars_per_token: float) -> int:
    """The most characters whose estimate stays within ``tokens``."""
    return math.floor(max(tokens, 0) * chars_per_token)


def chars_per_token_calibrated(*, previous: float, characters: int, tokens: int) -> float:
    """The running characters-per-token figure after a turn whose ``characters`` of text the API
    counted as ``tokens`` input tokens (cache reads and writes included). A moving average, so
    one odd turn does not swing the budgets; measurements out of range are ignored."""
    if tokens <= 0 or characters <= 0:
        return previous
    measured = characters / tokens
    low, high = CHARS_PER_TOKEN_RANGE
    if not low <= measured <= high:
        return previous
    return previous + CALIBRATION_WEIGHT * (measured - previous)
