from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from silentstar.words import counted, cut_words, moment_said, quoted

pytestmark = pytest.mark.store_free


@pytest.mark.parametrize(
    ("number", "said"),
    [(0, "0 turns"), (1, "1 turn"), (2, "2 turns"), (1200, "1,200 turns"), (-1, "-1 turns")],
)
def test_it_says_one_in_the_singular_and_every_other_number_in_the_plural(number, said):
    assert counted(number, "turn") == said


def test_it_takes_a_plural_not_made_with_an_s():
    assert counted(1, "summary", "summaries") == "1 summary"
    assert counted(3, "summary", "summaries") == "3 summaries"
    assert counted(2, "note over the limit", "notes over the limit") == "2 notes over the limit"


@given(st.integers(min_value=0, max_value=10**9), st.sampled_from(["turn", "older summary"]))
def test_it_always_starts_with_the_number_as_written_with_thousands(number, noun):
    said = counted(number, noun)
    assert said.startswith(f"{number:,} ")
    assert said.endswith(noun) == (number == 1)


def test_it_says_a_moment_in_the_one_format_in_the_zone_it_carries():
    moment = datetime(2026, 12, 6, 3, 34, tzinfo=UTC)
    assert moment_said(moment) == "6 Dec 2026, 03:34"
    assert moment_said(moment.astimezone(ZoneInfo("Asia/Tokyo"))) == "6 Dec 2026, 12:34"
    assert moment_said(moment, year=False) == "6 Dec, 03:34"


@given(st.datetimes(timezones=st.just(UTC)))
def test_it_says_every_moment_as_its_day_month_year_and_minute(moment):
    day, month, year, time = moment_said(moment).replace(",", "").split(" ")
    assert (int(day), month, int(year)) == (moment.day, f"{moment:%b}", moment.year)
    assert time == f"{moment.hour:02}:{moment.minute:02}"


def test_it_quotes_a_text_with_the_quotation_marks_inside_it_made_single():
    assert quoted("Sable") == "“Sable”"
    said = quoted("3 fragments from the character card “Sable”")
    assert said == "“3 fragments from the character card ‘Sable’”"


def test_cut_words_keeps_a_short_text_whole_on_one_line():
    assert cut_words("the blue\n kettle") == "the blue kettle"


def test_cut_words_cuts_at_a_words_end():
    assert cut_words("the blue kettle whistles at dawn", limit=20) == "the blue kettle…"


@given(st.text(), st.integers(min_value=8, max_value=80))
def test_cut_words_is_never_longer_than_its_limit_and_begins_as_the_text(text, limit):
    said = cut_words(text, limit=limit)
    assert len(said) <= limit
    one_line = " ".join(text.split())
    assert one_line.startswith(said.removesuffix("…").rstrip(" ,;:."))
