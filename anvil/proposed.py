"""Edit, preview, apply a proposed text: the one page for a Loom call's draft and an import's
proposal (a draft, or a text to add to the wake text).

The page shows the text in a text area and what applying it would change now (a draft's diff
against the Gem, fragment by fragment, or the wake text's before and after); "Preview" posts
back to the page, "Apply" to the caller's apply view, which comes back here with the text kept
and the reason when it cannot apply it.

A proposed text knows what it was written against (docs/anvil-and-lens.md). When that changed
since, the page shows what the text changes and what changed meanwhile, the conflicting parts
marked, today's text beside the text area, and the parts of a draft that can be applied one by
one; "Save against today's text" makes the text say it was written against today's (a draft's
written-against sections, a wake text's ``against``), for the person who edited it so. A Loom
call's page adds "Ask again" (``again_url``).
"""

from dataclasses import dataclass

from anvil.fragments import draft_check_context, draft_preview_fragments
from anvil.pages import anvil_page
from anvil.proposals import wake_digest
from anvil.textdiff import text_diff_html
from events.selectors import source_events
from gem.draft import DraftError, draft_check, draft_diff, draft_parse, draft_rebased


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
    base: str = "",
    again_url: str = "",
    wake_now: str = "",
):
    """The page for ``text``: its draft's preview and check against ``base`` (what it was
    written against, when it is kept beside it), unless ``wake_diff`` (an addition's comparison
    with the text it adds to, the wake text or the ambient prose: ``base`` that text when it was
    proposed, ``wake_now`` as it is in use) is given; ``error`` says why it cannot
    be applied and ``text_errors`` why the text is not one."""
    rebase = request.method == "POST" and "rebase" in request.POST
    diff = None
    checked: dict = {}
    if wake_diff is not None:
        checked = _wake_checked(request, base=base, now=wake_now, rebase=rebase)
    elif not text_errors:
        try:
            if rebase:
                text = draft_rebased(text)
            draft = draft_parse(text)
            diff = draft_diff(draft, events_found=source_events)
            checked = draft_check_context(draft_check(draft, base=base))
        except DraftError as problem:
            error = error or str(problem)
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
        rebased=rebase and not error,
        again_url=again_url,
        **checked,
    )


def _wake_checked(request, *, base: str, now: str, rebase: bool) -> dict:
    """A wake text against the wake text in use when it was proposed (``base``) and now
    (``now``): what changed meanwhile, or the digest of today's it is applied against once a
    person saved it so (``against``)."""
    against = wake_digest(now) if rebase else request.POST.get("against", "")
    if against == wake_digest(now):
        return {"against": against}
    if not base:
        return {"wake_unchecked": True}
    if base == now:
        return {}
    return {
        "wake_moved": text_diff_html(base, now, old_label="when proposed", new_label="now"),
        "today": now,
    }
