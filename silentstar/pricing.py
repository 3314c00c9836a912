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

``prices_laid_over`` and ``minimums_laid_over`` read the settings' JSON over a table, raising
``ValueError`` with what is wrong (the settings name the variable).
"""

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

PRICES_DATE = "2026-11-27"
# US dollars per search of the API's web search tool ($10 per 1,000), on top of the tokens.
WEB_SEARCH_PRICE = 10 / 1000


@dataclass(frozen=True, slots=True)
class Price:
    """US dollars per million tokens."""

    input: float
    output: float
    cache_write_5m: float
    cache_write_1h: float
    cache_read: float


PRICE_NAMES = tuple(field.name for field in fields(Price))


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


@dataclass
class Tokens:
    """Tokens as the API counts them, of one call or added up over many: ``input_tokens`` were
    neither read from the cache nor written to it. ``web_searches`` counts the web search tool's
    searches, billed by the search rather than by the token."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_5m_tokens: int = 0
    cache_write_1h_tokens: int = 0
    web_searches: int = 0

    def add(self, other: "Tokens") -> None:
        for name in TOKEN_NAMES:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    @property
    def sent_tokens(self) -> int:
        """Every token of the prompts: uncached, read from the cache and written to it."""
        return (
            self.input_tokens
            + self.cache_read_tokens
            + self.cache_write_5m_tokens
            + self.cache_write_1h_tokens
        )


TOKEN_NAMES = tuple(field.name for field in fields(Tokens))


def cost(price: Price, tokens: Tokens) -> float:
    """US dollars for ``tokens`` at ``price``, with the web searches made."""
    return (
        tokens.input_tokens * price.input
        + tokens.output_tokens * price.output
        + tokens.cache_read_tokens * price.cache_read
        + tokens.cache_write_5m_tokens * price.cache_write_5m
        + tokens.cache_write_1h_tokens * price.cache_write_1h
    ) / 1_000_000 + tokens.web_searches * WEB_SEARCH_PRICE


PRICES_EXAMPLE = '{"claude-opus-5-5": {"input": 4, "output": 20}}'
MINIMUMS_EXAMPLE = '{"claude-opus-5-5": 512}'


def prices_laid_over(table: Mapping[str, Price], text: str) -> dict[str, Price]:
    """``table`` with the prices of the JSON object ``text`` laid over it, in US dollars per
    million tokens. A model the table prices (by name or by the start of its name) may give only
    the prices that change; any other model gives all five."""
    prices = dict(table)
    for model, given in _object(text, PRICES_EXAMPLE).items():
        if not isinstance(given, dict):
            raise ValueError(
                f"the prices of {model!r} must be an object such as "
                f'{{"input": 4, "output": 20}}, got {given!r}'
            )
        unknown = sorted(set(given) - set(PRICE_NAMES))
        if unknown:
            raise ValueError(
                f"{model!r} has no price named {', '.join(map(repr, unknown))} "
                f"(the prices are {', '.join(PRICE_NAMES)})"
            )
        for name, value in given.items():
            if not _number(value) or value < 0:
                raise ValueError(
                    f"{model!r}'s {name} must be a number of US dollars per million tokens, "
                    f"0 or more, got {value!r}"
                )
        changes = {name: float(value) for name, value in given.items()}
        known = for_model(table, model)
        if known is None:
            missing = [name for name in PRICE_NAMES if name not in changes]
            if missing:
                raise ValueError(
                    f"{model!r} is not in the price table, so it needs all five prices "
                    f"({', '.join(PRICE_NAMES)}); missing: {', '.join(missing)}"
                )
            prices[model] = Price(**changes)
        else:
            prices[model] = replace(known, **changes)
    return prices


def minimums_laid_over(table: Mapping[str, int], text: str) -> dict[str, int]:
    """``table`` with the cache minimums of the JSON object ``text`` laid over it (tokens)."""
    given = _object(text, MINIMUMS_EXAMPLE)
    for model, value in given.items():
        if not (isinstance(value, int) and not isinstance(value, bool)) or value < 1:
            raise ValueError(
                f"the cache minimum of {model!r} must be a whole number of tokens, 1 or more, "
                f"got {value!r}"
            )
    return {**table, **given}


def _object(text: str, example: str) -> dict:
    """The JSON object ``text`` (``{}`` when blank), its keys model names."""
    try:
        given = json.loads(text.strip() or "{}")
    except ValueError as error:
        raise ValueError(f"not JSON ({error}); give an object such as {example}") from None
    if not isinstance(given, dict):
        raise ValueError(f"must be a JSON object such as {example}, got {given!r}")
    if "" in given:
        raise ValueError("a model's name is empty")
    return given


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
