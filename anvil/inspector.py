"""The Anvil's context inspector: a page per turn showing exactly why she knew what she knew.

The figures and the reasons are ``heart.inspect``'s (``manage.py inspect`` prints the same);
this module adds what a page needs: each section's bar against its budget (drawn as SVG, no
script), links to the rows the context names, and the word diff of each section that changed
since the turn before (``anvil.textdiff``).
"""

from dataclasses import dataclass

from django.contrib.admin.utils import quote
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.safestring import SafeString

from anvil.textdiff import text_change_summary, text_diff_html
from anvil.why import VIEW_PERMISSION, WhyForm
from events.models import Nudge, Turn
from heart.inspect import (
    OFFLINE_MODEL,
    Bar,
    Inspection,
    LeftOut,
    SectionChange,
    sections_of,
    turn_inspection,
)
from heart.travel import Travel, snapshot_travelled

ADMIN_PAGES = {
    "working_memory": "admin:gem_workingmemory_change",
    "summary": "admin:mirror_summary_change",
    "fragment": "admin:gem_fragment_change",
    "event": "admin:events_event_change",
}


@dataclass(frozen=True)
class Meter:
    """A bar as the page draws it: the part of its budget used, in hundredths of the width."""

    bar: Bar

    @property
    def width(self) -> str:
        share = self.bar.share
        return f"{min(share or 0.0, 1.0) * 100:.1f}"

    @property
    def full(self) -> bool:
        return (self.bar.share or 0.0) >= 1.0


@dataclass(frozen=True)
class Diff:
    change: SectionChange
    summary: str
    html: SafeString


def link_of(link: tuple[str, str] | None) -> str:
    """The Anvil's page of a row a context names, or "" when there is none."""
    if link is None:
        return ""
    kind, ref = link
    return reverse(ADMIN_PAGES[kind], args=[quote(ref)])


def left_out_rows(inspection: Inspection) -> list[tuple[str, list[tuple[LeftOut, str]]]]:
    """What was left out, by section, each with the Anvil's page of its row."""
    return [
        (section, [(item, link_of(item.link)) for item in items])
        for section, items in inspection.left_out_by_section
    ]


def diffs_of(changes: list[SectionChange]) -> list[Diff]:
    """Each change, with its word diff."""
    return [
        Diff(
            change,
            text_change_summary(change.before, change.after),
            text_diff_html(
                change.before, change.after, old_label="turn before", new_label="this turn"
            ),
        )
        for change in changes
    ]


def answered_by(turn: Turn) -> str:
    """Who answered the turn, as the page says it: the offline companion, or the model."""
    return "the offline companion" if turn.model == OFFLINE_MODEL else turn.model


def inspector_view(site, request, *, turn_id: int) -> TemplateResponse:
    """The context inspector of the Anvil's ``site`` for one turn (for accounts that may view
    the context snapshots)."""
    if not request.user.has_perm(VIEW_PERMISSION):
        raise PermissionDenied
    turn = get_object_or_404(Turn.objects.select_related("event", "reply_event"), pk=turn_id)
    inspection = turn_inspection(turn=turn)
    travel = snapshot_travelled(inspection.snapshot) if inspection.snapshot else None
    return TemplateResponse(
        request,
        "anvil/inspector.html",
        {
            **site.each_context(request),
            "title": f"Context of turn {turn.number}",
            "inspection": inspection,
            "answered_by": answered_by(turn),
            "wrote_first": Nudge.objects.filter(turn=turn).values_list("said", flat=True).first(),
            "meters": [Meter(bar) for bar in inspection.bars],
            "pool_meters": [Meter(bar) for bar in inspection.pools],
            "recalled": [(item, link_of(item.link)) for item in inspection.recalled],
            "found": [(item, link_of(item.link)) for item in inspection.found],
            "left_out": left_out_rows(inspection),
            "diffs": diffs_of(inspection.changed),
            "cache_meter": _cache_meter(inspection),
            "why_form": WhyForm(),
            "travel": travel,
            "travel_diffs": diffs_of(travel_changes(travel)) if travel else [],
        },
    )


def travel_changes(travel: Travel) -> list[SectionChange]:
    """The sections where the turn assembled again differs from its snapshot, as changes from
    what Claude received to what the data gives now."""
    if not travel.possible or travel.agrees:
        return []
    then = sections_of(travel.snapshot.assembled_user)
    again = sections_of(travel.user)
    changes = []
    for name in travel.differing:
        if name == "system":
            before, after = travel.snapshot.assembled_system, travel.system
        else:
            before, after = then.get(name, ""), again.get(name, "")
        changes.append(SectionChange(name, "changed", before, after))
    return changes


def _cache_meter(inspection) -> Meter | None:
    cache = inspection.cache
    if cache is None or not cache.recorded or not cache.total:
        return None
    return Meter(Bar("Read from the cache", cache.read, cache.total))
