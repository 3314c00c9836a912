import pytest
from hypothesis import given
from hypothesis import strategies as st

from anvil.textdiff import text_change_summary, text_diff_html

pytestmark = pytest.mark.store_free

lines = st.lists(st.text(alphabet="ab <&>", max_size=6), max_size=8).map("\n".join)


def test_it_escapes_the_texts_and_the_labels():
    table = text_diff_html("a <b>", "a <i>", old_label="<old>", new_label="new & then")
    assert "<b>" not in table and "<i>" not in table
    assert "&lt;old&gt;" in table
    assert "new &amp; then" in table


def test_it_says_what_changed_in_words():
    assert text_change_summary("one\ntwo", "one\nthree\nfour") == "2 line(s) added, 1 removed"
    assert text_change_summary("same", "same") == "no line changed"


@given(old=lines, new=lines)
def test_it_counts_lines_so_that_the_difference_adds_up(old, new):
    summary = text_change_summary(old, new)
    if summary == "no line changed":
        assert old.splitlines() == new.splitlines()
        return
    added, removed = (int(part.split()[0]) for part in summary.split(", "))
    assert added - removed == len(new.splitlines()) - len(old.splitlines())
