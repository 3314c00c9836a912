"""``python -m bench fuzz``: tag soup through the parser and ingest."""

import random
from dataclasses import replace

import pytest

from bench.fuzz import IDENTITIES, fuzz_run, tag_soup, unaccounted
from events import parse as parse_module
from events.parse import Span, parse

pytestmark = pytest.mark.store_free


def test_it_fuzzes_a_few_hundred_inputs_and_finds_nothing(bench):
    done = bench("fuzz", "--inputs", "300", "--ingest-every", "10", "--seed", "7")
    assert done.returncode == 0, done.stderr
    assert "300 inputs" in done.stdout
    assert "exceptions: 0" in done.stdout
    assert "characters unaccounted for: 0 (in 0 inputs)" in done.stdout
    assert "0 exceptions, 0 read back differently" in done.stdout
    assert "inputs/s" in done.stdout


def test_the_soup_draws_on_the_whole_alphabet():
    rng = random.Random(1)
    soup = "".join(tag_soup(rng)[0] for _ in range(3000))
    for piece in ("<say>", "</do>", "<feeling>", "<luna>", "<say", "recall(", "search(", "done:"):
        assert piece in soup
    for character in ("\x00", "\r\n", "\u2028", "\ud800", "🙂", "’"):
        assert character in soup


def test_it_counts_characters_a_parse_loses():
    text = "<luna><say>hello <feeling>warm</feeling></say> aside"
    parsed = parse(text, identities=IDENTITIES)
    assert unaccounted(text, parsed) == 0

    first, *rest = parsed.spans
    lost_span = replace(parsed, spans=(Span(first.role, first.text[1:]), *rest))
    assert unaccounted(text, lost_span) == 1
    assert unaccounted(text, replace(parsed, processing="")) == len("aside")


def test_it_counts_the_parsers_own_failures(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(parse_module, "_parse_strict", broken)
    result = fuzz_run(inputs=50, ingest_every=0, seed=3)
    assert result["exceptions"] == 50
    assert result["unaccounted_characters"] == 0  # the fallback keeps the whole message
    assert result["examples"]["exceptions"]
