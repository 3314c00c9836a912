"""The Anvil's lists: each cell named after its column, for the cards a phone shows the rows as
(static/anvil/anvil.css), since a style sheet cannot read a table's headers."""

from django import template
from django.utils.html import format_html, strip_tags
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import capfirst

register = template.Library()


@register.simple_tag
def cells_labelled(result: list[SafeString], headers: list[dict]) -> SafeString:
    """A row's cells as the admin renders them (``<td …>`` or ``<th …>``), each with its
    column's name in ``data-label``; the box that selects the row keeps none."""
    cells = []
    for cell, header in zip(result, headers, strict=False):
        if "action-checkbox-column" not in header["class_attrib"] and cell[:3] in ("<td", "<th"):
            label = capfirst(strip_tags(str(header["text"])).strip())
            tag, rest = mark_safe(cell[:3]), mark_safe(cell[3:])  # the admin's own markup
            cell = format_html('{} data-label="{}"{}', tag, label, rest)
        cells.append(cell)
    return mark_safe("".join(cells))
