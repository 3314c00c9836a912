"""What every Anvil page shares: the admin's frame around a page of its own, a source event
shown as one line, a long text cut in a list, a name in its identity's colour."""

from collections.abc import Iterable

from django.http import Http404
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.utils.html import format_html

from events.render import identity_slug
from events.selectors import source_events


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


# The one way a source event is shown (a fragment's, a working-memory item's, a suggestion's, a
# draft's): from Python through ``event_list``, in a template by including it with
# ``source_events_shown``'s context.
SOURCE_EVENTS = "admin/_source_events.html"


def source_events_shown(event_ids: Iterable[int], events=None, *, note: str = "") -> dict:
    """What ``SOURCE_EVENTS`` shows of ``event_ids``, in their order: each id with its event
    (from ``events``, by id, else read from the event log in one query), or None when the log
    does not have it; ``note`` after the list."""
    ids = list(event_ids)
    found = source_events(ids) if events is None else events
    return {"events": [(event_id, found.get(event_id)) for event_id in ids], "note": note}


def event_list(event_ids: Iterable[int], events=None, *, note: str = "") -> str:
    """Source events as a list (``source_events_shown``)."""
    return render_to_string(SOURCE_EVENTS, source_events_shown(event_ids, events, note=note))


def event_line(event_id: int, event) -> str:
    """One source event as one line: its id (a link), time, speaker and an excerpt; ``event``
    is None when the event log does not have it."""
    return render_to_string(f"{SOURCE_EVENTS}#event", {"event_id": event_id, "event": event})


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


def row_id(object_id: str) -> int:
    """The admin's ``object_id`` (any text in the address) as a row id, or a 404."""
    if not str(object_id).isdigit():
        raise Http404("No such row.")
    return int(object_id)
