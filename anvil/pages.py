"""What every Anvil page shares: the admin's frame around a page of its own, and a source event
shown as one line."""

from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html
from django.utils.text import Truncator


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
