"""What a call to Claude costs, and the smallest prefix each model's prompt cache keeps.

Pure: standard library only. The tables are the defaults; the settings
(``SILENTSTAR_MODEL_PRICES``, ``SILENTSTAR_CACHE_MINIMUM_TOKENS``) are laid over them.

Prices are US dollars per million tokens, from Anthropic's pricing page
(platform.claude.com/docs/en/about-claude/pricing) as it stood on 27 November 2026: base input,
output, a 5-minute cache write (1.25× input), a 1-hour cache write (2× input) and a cache read
("hits and refreshes": 0.1× input, 0.05× on Opus 5.5 and, since 7 October 2026, on Sonnet 5.5).
Haiku 5.5's prices are those of a prompt up to 100,000 tokens.

The minimums are from Anthropic's prompt-caching documentation (October 2026): a prefix shorter
than the model's minimum is silently not cached. Haiku 5.5's was not published; 4,096, that of
Haiku 4.5, is assumed until measured.

A model is looked up by its name, then by the longest entry its name starts with (so a dated
name such as ``claude-sonnet-4-5-20250929`` finds ``claude-sonnet-4-5``).
"""

from collections.abc import Mapping
from dataclasses import dataclass

PRICES_DATE = "2026-11-27"


@dataclass(frozen=True, slots=True)
class Price:
    """US dollars per million tokens."""

    input: float
    output: float
    cache_write_5m: float
    cache_write_1h: float
    cache_read: float


def _price(input: float, output: float, read_share: float = 0.1) -> Price:
    return Price(input, output, input * 1.25, input * 2, input * read_share)


PRICES: dict[str, Price] = {
    "claude-fable-5-1": _price(10, 50, 0.025),
    "claude-opus-5-5": _price(4, 20, 0.05),
    "claude-opus-5": _price(5, 25),
    "claude-opus-4-8": _price(5, 25),
    "claude-opus-4-7": _price(5, 25),
    "claude-opus-4-6": _price(5, 25),
    "claude-opus-4-5": _price(5, 25),
    "claude-sonnet-5-5": _price(2, 10, 0.05),
    "claude-sonnet-5": _price(2, 10),
    "claude-sonnet-4-6": _price(3, 15),
    "claude-sonnet-4-5": _price(3, 15),
    "claude-haiku-5-5": _price(0.10, 0.50),
    "claude-haiku-4-5": _price(1, 5),
}

CACHE_MINIMUM_TOKENS: dict[str, int] = {
    "claude-opus-5-5": 512,
    "claude-sonnet-5-5": 512,
    "claude-opus-4-8": 1024,
    "claude-sonnet-4-6": 1024,
    "claude-sonnet-4-5": 1024,
    "claude-opus-4-7": 2048,
    "claude-opus-4-6": 4096,
    "claude-opus-4-5": 4096,
    "claude-haiku-4-5": 4096,
    "claude-haiku-5-5": 4096,
}
CACHE_MINIMUM_UNKNOWN = 1024  # a model in neither table: the middle of the published range


def for_model[T](table: Mapping[str, T], model: str) -> T | None:
    """The entry for ``model``: its own, else the longest one its name starts with."""
    if model in table:
        return table[model]
    starts = [name for name in table if model.startswith(name)]
    return table[max(starts, key=len)] if starts else None


def cache_minimum(table: Mapping[str, int], model: str) -> int:
    """The fewest tokens a prefix needs for ``model``'s cache to keep it."""
    found = for_model(table, model)
    return CACHE_MINIMUM_UNKNOWN if found is None else found


def cost(
    price: Price,
    *,
    input_tokens: int,
    output_tokens: int,
    cache_read_tokens: int,
    cache_write_5m_tokens: int,
    cache_write_1h_tokens: int,
) -> float:
    """US dollars for one call's usage as the API reports it (``input_tokens`` is what was
    neither read from nor written to the cache)."""
    return (
        input_tokens * price.input
        + output_tokens * price.output
        + cache_read_tokens * price.cache_read
        + cache_write_5m_tokens * price.cache_write_5m
        + cache_write_1h_tokens * price.cache_write_1h
    ) / 1_000_000
