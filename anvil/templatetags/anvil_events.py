"""``{% source_events ids %}``: source events in a template, shown as everywhere in the Anvil
(``admin/_source_events.html``)."""

from django import template

from anvil.pages import source_events_shown

register = template.Library()


@register.inclusion_tag("admin/_source_events.html")
def source_events(event_ids, note: str = "") -> dict:
    """The events among ``event_ids``, read from the event log in one query, in that order."""
    return source_events_shown(event_ids, note=note)
