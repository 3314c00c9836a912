"""Differences between two texts, for a person to read: versions of ambient prose and wake
texts, a fragment's tiers before and after a fold or a draft.

The texts are set side by side, a row for each run of lines that stayed, went, came or changed;
within a changed run the words removed and added are marked. The words wrap with the page, so
nothing is cut mid-word and no row is wider than its column."""

import difflib
import re

from django.utils.html import escape, format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from silentstar.words import counted

# Words, runs of white space and single marks: a change of one comma marks the comma alone.
_TOKEN_RE = re.compile(r"\w+|\s+|[^\w\s]")

ROW_CLASSES = {"equal": "same", "replace": "changed", "delete": "removed", "insert": "added"}


def _tokens(text: str) -> list[str]:
    return _TOKEN_RE.findall(text)


def _marked(tokens: list[str], tag: str) -> str:
    """The tokens escaped, inside one ``tag`` (``del`` or ``ins``) when there is any text."""
    text = escape("".join(tokens))
    return f"<{tag}>{text}</{tag}>" if text else ""


def _changes(before: list[str], after: list[str]) -> list[tuple[bool, list[str], list[str]]]:
    """``(same, old tokens, new tokens)`` runs; a space alone between two changes joins them,
    so "no sugar" → "with honey" reads as one change rather than two around a kept space."""
    runs: list[tuple[bool, list[str], list[str]]] = []
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        same, old_run, new_run = op == "equal", before[i1:i2], after[j1:j2]
        if not same and len(runs) >= 2 and not runs[-2][0] and "".join(runs[-1][1]).isspace():
            _, space, _ = runs.pop()
            _, old_before, new_before = runs.pop()
            old_run, new_run = old_before + space + old_run, new_before + space + new_run
        runs.append((same, old_run, new_run))
    return runs


def word_diff(old: str, new: str) -> tuple[str, str]:
    """``old`` and ``new`` as escaped HTML, the words only one of them holds inside ``<del>``
    (in ``old``) and ``<ins>`` (in ``new``)."""
    old_html: list[str] = []
    new_html: list[str] = []
    for same, old_run, new_run in _changes(_tokens(old), _tokens(new)):
        if same:
            old_html.append(escape("".join(old_run)))
            new_html.append(escape("".join(new_run)))
        else:
            old_html.append(_marked(old_run, "del"))
            new_html.append(_marked(new_run, "ins"))
    return "".join(old_html), "".join(new_html)


def text_diff_html(
    old: str, new: str, *, old_label: str, new_label: str, context: int | None = None
) -> SafeString:
    """Both texts side by side (stacked on a narrow screen), run of lines by run of lines,
    removed and added words marked; everything escaped, the labels too.

    ``context``: of a long run of lines that stayed, only that many lines next to a change are
    shown, the rest said in one row ("… 40 lines the same …"), so a change at the end of a long
    text is seen without scrolling past all of it."""
    old_lines, new_lines = old.splitlines(), new.splitlines()
    rows = []
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    opcodes = matcher.get_opcodes()
    for index, (op, i1, i2, j1, j2) in enumerate(opcodes):
        if op == "equal":
            rows += _same_rows(
                old_lines[i1:i2],
                context=context,
                before_change=index + 1 < len(opcodes),
                after_change=index > 0,
                labels=(old_label, new_label),
            )
            continue
        old_run, new_run = "\n".join(old_lines[i1:i2]), "\n".join(new_lines[j1:j2])
        old_html, new_html = word_diff(old_run, new_run)
        rows.append(
            (ROW_CLASSES[op], old_label, mark_safe(old_html), new_label, mark_safe(new_html))
        )
    body = format_html_join(
        "",
        '<tr class="anvil-diff-{}"><td data-label="{}">{}</td><td data-label="{}">{}</td></tr>',
        rows,
    )
    return format_html(
        '<table class="anvil-worddiff"><thead><tr><th scope="col">{}</th>'
        '<th scope="col">{}</th></tr></thead><tbody>{}</tbody></table>',
        old_label,
        new_label,
        body,
    )


def _same_rows(
    lines: list[str],
    *,
    context: int | None,
    before_change: bool,
    after_change: bool,
    labels: tuple[str, str],
) -> list[tuple]:
    """The rows of a run of lines that stayed: whole, or with only ``context`` lines next to
    each change and the lines between said in one row."""
    head = lines[:context] if context is not None and after_change else []
    tail = lines[-context:] if context is not None and before_change and context else []
    if context is None or len(lines) <= len(head) + len(tail) + 1:
        text = escape("\n".join(lines))
        return [("same", labels[0], text, labels[1], text)]
    rows = []
    for part in (head, None, tail):
        if part is None:
            hidden = len(lines) - len(head) - len(tail)
            said = f"… {hidden} line{'s' * (hidden != 1)} the same …"
            rows.append(("elided", labels[0], said, labels[1], said))
        elif part:
            text = escape("\n".join(part))
            rows.append(("same", labels[0], text, labels[1], text))
    return rows


def text_change_summary(old: str, new: str) -> str:
    """How many lines one text adds to and removes from another, in words."""
    added = removed = 0
    for line in difflib.ndiff(old.splitlines(), new.splitlines()):
        added += line.startswith("+ ")
        removed += line.startswith("- ")
    if not added and not removed:
        return "no line changed"
    return f"{counted(added, 'line')} added, {removed} removed"
