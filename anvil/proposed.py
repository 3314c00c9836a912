"""Edit, preview, apply a proposed text: the one page for a Loom call's draft and an import's
proposal (a draft, or a text to add to the wake text).

The page shows the text in a text area and what applying it would change now (a draft's diff
against the Gem, fragment by fragment, or the wake text's before and after); "Preview" posts
back to the page, "Apply" to the caller's apply view, which comes back here with the text kept
and the reason when it cannot apply it.
"""

from dataclasses import dataclass

from anvil.fragments import draft_preview_fragments
from anvil.pages import anvil_page
from events.selectors import source_events
from gem.draft import DraftError, draft_diff, draft_parse


@dataclass(frozen=True)
class ProposedText:
    """What the page says of one kind of proposed text."""

    intro: str  # the page's first sentence
    label: str  # the text area's label
    apply: str  # the apply button's words
    back: str  # the back link's words


def proposed_text_page(
    model_admin,
    request,
    *,
    title: str,
    original,
    text: str,
    words: ProposedText,
    edit_url: str,
    apply_url: str,
    back: str,
    error: str = "",
    text_errors: list[str] | None = None,
    wake_diff=None,
):
    """The page for ``text``: its draft's preview, unless ``wake_diff`` (a wake text's
    comparison) is given, ``error`` says why it cannot be applied or ``text_errors`` why the
    text is not one."""
    diff = None
    if wake_diff is None and not error and not text_errors:
        try:
            diff = draft_diff(draft_parse(text), events_found=source_events)
        except DraftError as problem:
            error = str(problem)
    return anvil_page(
        model_admin,
        request,
        "admin/anvil/proposed_edit.html",
        title,
        original=original,
        text=text,
        words=words,
        edit_url=edit_url,
        apply_url=apply_url,
        back=back,
        error=error,
        text_errors=text_errors or [],
        diff=diff,
        fragments=draft_preview_fragments(diff) if diff else [],
        wake_diff=wake_diff,
    )
