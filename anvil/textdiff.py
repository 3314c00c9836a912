"""Differences between two texts, for a person to read: versions of ambient prose and wake
texts, a fragment's tiers before and after a fold or a draft."""

import difflib

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe


def text_diff_html(old: str, new: str, *, old_label: str, new_label: str) -> SafeString:
    """Both texts side by side, line by line, changes marked. ``difflib.HtmlDiff`` escapes the
    lines it writes but not the labels."""
    table = difflib.HtmlDiff(wrapcolumn=72).make_table(
        old.splitlines(), new.splitlines(), escape(old_label), escape(new_label)
    )
    return mark_safe(table)


def text_change_summary(old: str, new: str) -> str:
    """How many lines one text adds to and removes from another, in words."""
    added = removed = 0
    for line in difflib.ndiff(old.splitlines(), new.splitlines()):
        added += line.startswith("+ ")
        removed += line.startswith("- ")
    if not added and not removed:
        return "no line changed"
    return f"{added} line(s) added, {removed} removed"
