"""Template filters for message text."""

import re

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from events.render import BOLD_RE, ITALIC_RE

register = template.Library()

_NEWLINE_RE = re.compile(r"\r\n|\r|\n")


@register.filter(is_safe=True)
def inline_markup(text: object) -> SafeString:
    """Escape everything, then ``**bold**``, ``*italic*`` (each within one line) and line breaks.

    Only the escaped text is ever placed between the tags this adds, so no markup in the
    message survives as markup.
    """
    escaped = str(escape("" if text is None else text))
    escaped = BOLD_RE.sub(r"<strong>\1</strong>", escaped)
    escaped = ITALIC_RE.sub(r"<em>\1</em>", escaped)
    return mark_safe(_NEWLINE_RE.sub("<br>", escaped))  # only escaped text between our tags
