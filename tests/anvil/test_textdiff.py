import html
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from anvil.textdiff import text_change_summary, text_diff_html, word_diff

pytestmark = pytest.mark.store_free

lines = st.lists(st.text(alphabet="ab <&>,", max_size=6), max_size=8).map("\n".join)
TAG_RE = re.compile(r"</?(?:del|ins)>")


def cells(table: str) -> list[tuple[str, str]]:
    """Each row's two cells, as the text a person reads (markup removed, entities read)."""
    pairs = re.findall(r"<td[^>]*>(.*?)</td><td[^>]*>(.*?)</td>", table, re.S)
    return [(html.unescape(TAG_RE.sub("", o)), html.unescape(TAG_RE.sub("", n))) for o, n in pairs]


def test_it_escapes_the_texts_and_the_labels():
    table = text_diff_html("a <b>", "a <i>", old_label="<old>", new_label="new & then")
    assert "<b>" not in table and "<i>" not in table
    assert "&lt;old&gt;" in table
    assert "new &amp; then" in table


def test_it_marks_the_words_that_changed_not_the_whole_line():
    old, new = word_diff(
        "Luna keeps her tea plain, no sugar.", "Luna keeps her tea plain, with honey."
    )
    assert old == "Luna keeps her tea plain, <del>no sugar</del>."
    assert new == "Luna keeps her tea plain, <ins>with honey</ins>."


def test_a_long_line_is_kept_whole_for_the_page_to_wrap():
    long_line = "word " * 60
    table = text_diff_html(long_line, long_line + "more", old_label="old", new_label="new")
    assert cells(table) == [(long_line, long_line + "more")]
    assert "&gt;" not in table and "<br" not in table  # no hard wraps, no continuation rows


def test_with_context_a_long_run_that_stayed_is_said_in_one_row():
    old = "\n".join(f"line {n}" for n in range(1, 21))
    new = old + "\nthe new end"

    rows = cells(text_diff_html(old, new, old_label="old", new_label="new", context=3))

    assert rows == [
        ("… 17 lines the same …", "… 17 lines the same …"),
        ("line 18\nline 19\nline 20", "line 18\nline 19\nline 20"),
        ("", "the new end"),
    ]


@given(old=lines, new=lines, context=st.integers(min_value=0, max_value=3))
def test_with_context_every_change_is_still_shown(old, new, context):
    rows = cells(text_diff_html(old, new, old_label="old", new_label="new", context=context))
    shown = [n for o, n in rows if not o.startswith("… ")]
    for line in set(new.splitlines()) - set(old.splitlines()):
        assert any(line in part for part in shown)


def test_it_says_what_changed_in_words():
    assert text_change_summary("one\ntwo", "one\nthree\nfour") == "2 lines added, 1 removed"
    assert text_change_summary("same", "same") == "no line changed"


@given(old=lines, new=lines)
def test_each_side_reads_as_its_own_text(old, new):
    rows = cells(text_diff_html(old, new, old_label="old", new_label="new"))
    assert " ".join(o for o, _ in rows).split() == old.split()
    assert " ".join(n for _, n in rows).split() == new.split()


@given(old=lines, new=lines)
def test_it_counts_lines_so_that_the_difference_adds_up(old, new):
    summary = text_change_summary(old, new)
    if summary == "no line changed":
        assert old.splitlines() == new.splitlines()
        return
    added, removed = (int(part.split()[0]) for part in summary.split(", "))
    assert added - removed == len(new.splitlines()) - len(old.splitlines())
