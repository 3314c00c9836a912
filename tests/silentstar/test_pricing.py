"""The price table and the cache minimums, and the settings' JSON laid over them."""

from dataclasses import replace

import pytest

from silentstar.pricing import (
    CACHE_MINIMUM_TOKENS,
    PRICES,
    WEB_SEARCH_PRICE,
    Price,
    Tokens,
    cost,
    minimums_laid_over,
    prices_laid_over,
)

pytestmark = pytest.mark.store_free


def test_it_keeps_the_table_when_nothing_is_given():
    assert prices_laid_over(PRICES, "") == PRICES == prices_laid_over(PRICES, "{}")
    assert minimums_laid_over(CACHE_MINIMUM_TOKENS, "  ") == CACHE_MINIMUM_TOKENS


def test_it_changes_only_the_prices_given_for_a_model_of_the_table():
    prices = prices_laid_over(PRICES, '{"claude-opus-5-5": {"input": 3, "cache_read": 0.3}}')

    opus = prices["claude-opus-5-5"]
    assert (opus.input, opus.cache_read) == (3.0, 0.3)
    assert (opus.output, opus.cache_write_5m) == (20, 5)
    assert prices["claude-haiku-4-5"] == PRICES["claude-haiku-4-5"]


def test_it_starts_a_dated_name_from_the_entry_it_begins_with():
    prices = prices_laid_over(PRICES, '{"claude-sonnet-4-5-20250929": {"output": 12}}')

    assert prices["claude-sonnet-4-5-20250929"] == replace(PRICES["claude-sonnet-4-5"], output=12)
    assert prices["claude-sonnet-4-5"] == PRICES["claude-sonnet-4-5"]


def test_it_adds_a_new_model_with_all_five_prices():
    text = (
        '{"claude-mystery-1": {"input": 1, "output": 2, "cache_write_5m": 1.25, '
        '"cache_write_1h": 2, "cache_read": 0.1}}'
    )

    price = prices_laid_over(PRICES, text)["claude-mystery-1"]

    assert price == Price(1, 2, 1.25, 2, 0.1)
    assert cost(price, Tokens(input_tokens=1_000_000, output_tokens=500_000)) == pytest.approx(2.0)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("{opus", "not JSON (Expecting property name"),
        ("[1, 2]", "must be a JSON object such as"),
        ('{"claude-opus-5-5": 4}', "the prices of 'claude-opus-5-5' must be an object"),
        ('{"claude-opus-5-5": {"inptu": 4}}', "'claude-opus-5-5' has no price named 'inptu'"),
        ('{"claude-opus-5-5": {"input": -1}}', "'claude-opus-5-5''s input must be a number"),
        ('{"claude-opus-5-5": {"input": "4"}}', "got '4'"),
        ('{"claude-opus-5-5": {"input": true}}', "got True"),
        ('{"claude-opus-5-5": {"input": NaN}}', "got nan"),
        ('{"claude-mystery-1": {"input": 1}}', "missing: output, cache_write_5m"),
        ('{"": {"input": 1}}', "a model's name is empty"),
    ],
)
def test_it_says_what_is_wrong_with_prices(text, said):
    with pytest.raises(ValueError) as raised:
        prices_laid_over(PRICES, text)

    assert said in str(raised.value)


def test_it_lays_cache_minimums_over_the_table():
    minimums = minimums_laid_over(
        CACHE_MINIMUM_TOKENS, '{"claude-haiku-5-5": 2048, "claude-new-1": 256}'
    )

    assert minimums["claude-haiku-5-5"] == 2048 and minimums["claude-new-1"] == 256
    assert minimums["claude-opus-5-5"] == 512


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("512", "must be a JSON object such as"),
        ('{"claude-opus-5-5": 0}', "'claude-opus-5-5' must be a whole number of tokens"),
        ('{"claude-opus-5-5": 512.5}', "got 512.5"),
        ('{"claude-opus-5-5": "512"}', "got '512'"),
        ('{"claude-opus-5-5": false}', "got False"),
    ],
)
def test_it_says_what_is_wrong_with_cache_minimums(text, said):
    with pytest.raises(ValueError) as raised:
        minimums_laid_over(CACHE_MINIMUM_TOKENS, text)

    assert said in str(raised.value)


def test_each_web_search_costs_its_price_on_top_of_the_tokens():
    price = Price(input=5, output=25, cache_write_5m=6.25, cache_write_1h=10, cache_read=0.5)
    tokens = Tokens(input_tokens=1_000_000, output_tokens=0)

    assert cost(price, replace(tokens, web_searches=3)) == pytest.approx(5 + 3 * WEB_SEARCH_PRICE)
    assert cost(price, replace(tokens, web_searches=1)) - cost(price, tokens) == pytest.approx(0.01)
