"""What compressing turns would cost: chunks and merges counted as the Mirror makes them, priced
at the configured prices, the worst case above the likely one."""

from datetime import UTC, datetime

import pytest

from mirror.estimate import SUMMARY_TOKENS, compression_estimate, turn_transcripts
from silentstar.pricing import PRICES

pytestmark = pytest.mark.django_db(databases=["default", "summaries"])


def test_turns_are_cut_into_chunks_and_every_three_summaries_merge(settings):
    settings.MIRROR_CHUNK_TURNS = 20
    estimate = compression_estimate(["#1 luna: hello there"] * 185)

    assert (estimate.turns, estimate.chunks) == (185, 10)
    assert estimate.merges == 3 + 1  # ten L0 make three L1, and three L1 one L2
    assert (estimate.calls, estimate.calls_most) == (24, 34)


def test_the_likely_cost_is_below_the_worst_and_follows_the_summarising_model(settings):
    settings.MIRROR_MAX_TOKENS = 4096
    estimate = compression_estimate(["#1 luna: " + "word " * 200] * 40)

    summarise = estimate.about[settings.MIRROR_SUMMARISE_MODEL]
    assert summarise.output_tokens == SUMMARY_TOKENS * (estimate.chunks + estimate.merges)
    assert 0 < estimate.cost_about < estimate.cost_most
    assert estimate.unpriced == []


def test_a_model_without_a_price_is_named_and_costs_nothing_counted(settings):
    settings.MIRROR_CLEAN_MODEL = "claude-unknown-1"
    settings.MODEL_PRICES = dict(PRICES)
    estimate = compression_estimate(["#1 luna: hello"] * 5)

    assert estimate.unpriced == ["claude-unknown-1"]
    assert estimate.cost_about > 0  # the other passes' models are priced


def test_no_turns_cost_nothing():
    estimate = compression_estimate([])
    assert (estimate.calls, estimate.cost_about, estimate.cost_most) == (0, 0, 0)


def test_messages_not_yet_logged_are_read_as_the_mirrors_turns():
    at = datetime(2026, 11, 1, tzinfo=UTC)
    said = [
        (at, "claude", True, "Welcome  back."),
        (at, "luna", False, "hi"),
        (at, "claude", True, "hello"),
        (at, "luna", False, "one"),
        (at, "luna", False, "two"),
    ]

    assert turn_transcripts(said) == [
        "#0 claude (say): Welcome back.\n#0 luna: hi\n#0 claude (say): hello",
        "#0 luna: one",
        "#0 luna: two",
    ]
