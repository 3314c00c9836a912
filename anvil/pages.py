"""What every Anvil page shares: the admin's frame around a page of its own, a source event
shown as one line, a long text cut in a list, a name in its identity's colour."""

from django.http import Http404
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.dateformat import format as date_format
from django.utils.html import format_html
from django.utils.text import Truncator

from events.render import identity_slug


def anvil_page(model_admin, request, template: str, title: str, **context) -> TemplateResponse:
    """An Anvil page inside the admin's frame, for ``model_admin``'s model."""
    return TemplateResponse(
        request,
        template,
        {
            **model_admin.admin_site.each_context(request),
            "opts": model_admin.model._meta,
            "title": title,
            **context,
        },
    )


EXCERPT_CHARS = 120


def event_line(event_id: int, event) -> str:
    """One source event as the Anvil lists it: its id (a link), time, speaker and an excerpt;
    ``event`` is None when the event log does not have it."""
    url = reverse("admin:events_event_change", args=[event_id])
    if event is None:
        return format_html('<a href="{}">#{}</a> (not in the event log)', url, event_id)
    return format_html(
        '<a href="{}">#{}</a> <span class="anvil-event-meta">{} {}</span> {}',
        url,
        event_id,
        event.ts.strftime("%Y-%m-%d %H:%M"),
        event.actor or "—",
        Truncator(" ".join(event.content.split())).chars(EXCERPT_CHARS),
    )


# About two lines of a list's text column: longer texts are cut, the rest one click away.
CUT_CHARS = 90


def cut_text(text: str) -> str:
    """A text as a list shows it: whole when short; otherwise cut to two lines by the page's
    CSS, and shown whole when clicked (a ``<details>`` whose summary is the text itself)."""
    if len(text) <= CUT_CHARS:
        return format_html("{}", text)
    return format_html('<details class="anvil-cut"><summary>{}</summary></details>', text)


def identity_name(name: str) -> str:
    """A name said by an identity, in that identity's colour (``admin/base_site.html``)."""
    if not name:
        return "—"
    return format_html(
        '<span class="anvil-identity" data-identity-slug="{}">{}</span>', identity_slug(name), name
    )


def short_when(moment) -> str:
    """A moment as a list column shows it, short enough to stay on one line: "29 Nov 19:04",
    with the year when it is not this one."""
    if moment is None:
        return "—"
    local = timezone.localtime(moment)
    same_year = local.year == timezone.localtime().year
    return date_format(local, "j M H:i" if same_year else "j M Y H:i")


def row_id(object_id: str) -> int:
    """The admin's ``object_id`` (any text in the address) as a row id, or a 404."""
    if not str(object_id).isdigit():
        raise Http404("No such row.")
    return int(object_id)
