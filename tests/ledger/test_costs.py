"""What the calls cost, per call and summed per day and per component (ledger/costs.py)."""

from datetime import UTC, date, datetime, timedelta

import pytest

from gem.services import time_zone_set
from ledger.costs import Figures, call_cost, costs_over, prices_said
from ledger.models import ModelCall
from silentstar.pricing import PRICES, Price, Tokens

pytestmark = pytest.mark.django_db(databases="__all__")

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
TOKENS = {
    "input_tokens": 1000,
    "output_tokens": 200,
    "cache_read_tokens": 5000,
    "cache_write_5m_tokens": 300,
    "cache_write_1h_tokens": 100,
}
# claude-opus-5-5: 1000 × $4 + 200 × $20 + 5000 × $0.20 + 300 × $5 + 100 × $8, per million
OPUS_CALL = 0.0113


def made(ts, component="heart", model="claude-opus-5-5", offline=False, **tokens):
    return ModelCall.objects.create(
        ts=ts, component=component, model=model, offline=offline, **(TOKENS | tokens)
    )


def test_it_prices_a_call_at_its_models_price():
    tokens = Tokens(**TOKENS)
    assert call_cost(model="claude-opus-5-5", offline=False, prices=PRICES, tokens=tokens) == (
        pytest.approx(OPUS_CALL)
    )
    dated = call_cost(
        model="claude-haiku-4-5-20251001", offline=False, prices=PRICES, tokens=tokens
    )
    assert dated == pytest.approx((1000 * 1 + 200 * 5 + 5000 * 0.1 + 300 * 1.25 + 100 * 2) / 1e6)


def test_a_model_with_no_price_has_no_cost_and_an_offline_call_costs_nothing():
    tokens = Tokens(**TOKENS)
    assert call_cost(model="claude-mystery-1", offline=False, prices=PRICES, tokens=tokens) is None
    assert call_cost(model="offline", offline=True, prices=PRICES, tokens=tokens) == 0


def test_a_local_models_call_costs_nothing_even_under_a_priced_name():
    tokens = Tokens(**TOKENS)
    for model in ("claude-opus-5-5", "qwen3:8b"):
        assert call_cost(model=model, offline=False, local=True, prices=PRICES, tokens=tokens) == 0


def test_a_day_of_local_calls_costs_nothing_and_has_no_unpriced_calls():
    ModelCall.objects.create(ts=NOW, component="heart", model="qwen3:8b", local=True, **TOKENS)

    heart = costs_over(days=1, prices=PRICES, now=NOW).components["heart"]

    assert (heart.calls, heart.dollars, heart.unpriced_calls) == (1, 0.0, 0)
    assert heart.dollars_text == "$0.0000"


def test_it_sums_each_day_and_component_of_the_last_days():
    made(NOW)
    made(NOW - timedelta(hours=1), input_tokens=3000)
    made(NOW, component="mirror-clean", model="claude-haiku-5-5")
    made(NOW - timedelta(days=2))
    made(NOW - timedelta(days=7))  # before the seven days

    costs = costs_over(days=7, prices=PRICES, now=NOW)

    assert (costs.first, costs.last) == (date(2026, 11, 21), date(2026, 11, 27))
    assert [day.day for day in costs.days] == [date(2026, 11, 21 + n) for n in range(7)]
    today = costs.days[-1]
    assert list(today.components) == ["heart", "mirror-clean"]
    heart = today.components["heart"]
    assert (heart.calls, heart.input_tokens, heart.cache_read_tokens) == (2, 4000, 10000)
    assert heart.dollars == pytest.approx(2 * OPUS_CALL + 2000 * 4 / 1e6)
    assert today.total.calls == 3 and costs.days[-3].total.calls == 1
    assert not costs.days[0].components
    assert list(costs.components) == ["heart", "mirror-clean"]
    assert costs.components["heart"].calls == 3 and costs.total.calls == 4
    assert costs.total.dollars == pytest.approx(sum(day.total.dollars for day in costs.days))


def test_its_days_are_the_owners():
    """23:30 UTC on the 26th is already the 27th in Amsterdam."""
    time_zone_set(name="Europe/Amsterdam")
    made(datetime(2026, 11, 26, 23, 30, tzinfo=UTC))
    made(datetime(2026, 11, 26, 22, 30, tzinfo=UTC))

    costs = costs_over(days=2, prices=PRICES, now=NOW)

    assert costs.zone == "Europe/Amsterdam"
    assert [(day.day, day.total.calls) for day in costs.days] == [
        (date(2026, 11, 26), 1),
        (date(2026, 11, 27), 1),
    ]


def test_it_says_no_price_rather_than_nothing_for_a_model_with_no_price():
    made(NOW, model="claude-mystery-1")
    made(NOW, model="claude-mystery-1", component="compass")
    made(NOW, model="offline", offline=True, component="compass")

    costs = costs_over(days=1, prices=PRICES, now=NOW)

    assert costs.components["heart"].dollars_text == "no price"
    assert costs.components["compass"].dollars_text == "$0.0000 + 1 call with no price"
    assert costs.total.unpriced_calls == 2 and costs.total.dollars == 0


def test_it_prices_at_the_prices_it_is_given():
    made(NOW)
    prices = PRICES | {"claude-opus-5-5": Price(8, 40, 10, 16, 0.4)}

    assert costs_over(days=1, prices=prices, now=NOW).total.dollars == pytest.approx(2 * OPUS_CALL)
    assert prices_said(PRICES) == "at Anthropic's prices of 2026-11-27"
    assert prices_said(prices).endswith("with SILENTSTAR_MODEL_PRICES for claude-opus-5-5")


def test_the_cache_read_share_is_of_every_token_sent():
    figures = Figures(calls=1, **TOKENS)

    assert figures.cache_read_share == pytest.approx(5000 / (1000 + 5000 + 300 + 100))
    assert figures.share_text == "78.1%"
    assert Figures().cache_read_share is None and Figures().share_text == "—"


@pytest.mark.parametrize(
    ("dollars", "shown"), [(0.01234, "$0.0123"), (1234.5, "$1,234.50"), (0, "$0.0000")]
)
def test_it_shows_dollars_to_the_cent_and_below_one_to_a_hundredth_of_a_cent(dollars, shown):
    assert Figures(calls=1, dollars=dollars).dollars_text == shown
