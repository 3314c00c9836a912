"""Where the proposed plans fall among the plans in working memory (``anvil/plans_picture.py``):
the geometry of the picture, and the consultation's page drawing it."""

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.urls import reverse
from django.utils import timezone

from anvil.decay_picture import tick_label, time_ticks
from anvil.plans_picture import (
    MEMORY,
    NARROW,
    PROPOSED,
    WIDE,
    Plan,
    plans_build,
)
from compass.models import Consultation
from compass.services import consultation_run
from gem.services import time_zone_set, working_memory_create

ZONE = "Europe/Amsterdam"
AMSTERDAM = ZoneInfo(ZONE)
NOW = datetime(2027, 3, 1, 9, 0, tzinfo=AMSTERDAM)


def plan(name: str, due: datetime, *, lane=PROPOSED, hidden=False, state="pending", content=""):
    return Plan(lane, name, content or f"the plan called {name}", due, hidden, state)


def marks_of(picture, frame=WIDE):
    layout = next(layout for layout in picture.layouts if layout.frame == frame)
    return layout, {mark.plan.name: mark for mark in layout.marks}


def test_it_places_dues_along_the_axis_from_now_to_a_week_at_least():
    picture = plans_build(
        [plan("plan 1", NOW + timedelta(days=1)), plan("plan 2", NOW + timedelta(days=3))],
        now=NOW,
        zone=AMSTERDAM,
    )
    layout, marks = marks_of(picture)
    left, width = WIDE.left, WIDE.plot_width
    assert layout.now_x == left
    # Three days ahead is short of a week: the axis runs to a week, and a day is a seventh.
    assert marks["plan 1"].x == pytest.approx(left + width / 7, abs=0.1)
    assert marks["plan 2"].x == pytest.approx(left + width * 3 / 7, abs=0.1)
    moments = time_ticks(NOW, NOW + timedelta(days=7), zone=AMSTERDAM, most=WIDE.ticks)
    assert [tick.label for tick in layout.ticks] == [
        tick_label(m, moments, i, AMSTERDAM) for i, m in enumerate(moments)
    ]
    assert layout.ticks[0].label == "2 Mar"


def test_plans_in_memory_and_proposals_go_in_their_own_lanes():
    picture = plans_build(
        [
            plan("wm 4", NOW + timedelta(days=2), lane=MEMORY, state="active"),
            plan("plan 1", NOW + timedelta(days=5)),
        ],
        now=NOW,
        zone=AMSTERDAM,
    )
    layout, marks = marks_of(picture)
    memory, proposed = layout.lanes
    assert (memory.name, proposed.name) == (MEMORY, PROPOSED)
    assert marks["wm 4"].y == memory.line_y < proposed.top
    assert marks["plan 1"].y == proposed.line_y < layout.axis_y
    assert [entry.lane for entry in picture.listed] == ["In working memory", "Proposed"]


def test_two_plans_due_within_the_clash_window_are_joined_by_a_band():
    picture = plans_build(
        [
            plan("wm 4", NOW + timedelta(days=2), lane=MEMORY, state="active"),
            plan("plan 1", NOW + timedelta(days=2, minutes=45)),
            plan("plan 2", NOW + timedelta(days=2, hours=3)),
            plan("plan 3", NOW + timedelta(days=2, minutes=50), state="rejected"),
        ],
        now=NOW,
        zone=AMSTERDAM,
    )
    layout, marks = marks_of(picture)
    [band] = layout.bands
    assert "wm 4" in band.title and "plan 1" in band.title
    assert band.x < marks["wm 4"].x <= marks["plan 1"].x < band.x + band.width
    assert band.top < marks["wm 4"].y < marks["plan 1"].y < band.top + band.height
    assert "1 pair due within an hour" in picture.description


def test_an_overdue_plan_sits_at_the_left_edge_marked_overdue():
    picture = plans_build(
        [plan("wm 7", NOW - timedelta(days=3), lane=MEMORY, state="overdue")],
        now=NOW,
        zone=AMSTERDAM,
    )
    for frame in (WIDE, NARROW):
        layout, marks = marks_of(picture, frame)
        assert marks["wm 7"].x == layout.now_x == frame.left
        assert marks["wm 7"].label.endswith("· overdue")
    assert "(1 overdue)" in picture.description
    assert picture.listed[0].text.endswith("(overdue)")


def test_a_hidden_plan_is_drawn_as_hidden_and_said_so():
    picture = plans_build(
        [plan("plan 1", NOW + timedelta(days=2), hidden=True)], now=NOW, zone=AMSTERDAM
    )
    _, marks = marks_of(picture)
    assert marks["plan 1"].plan.hidden
    assert marks["plan 1"].label.endswith("· hidden")
    assert "(hidden)" in marks["plan 1"].title and "(hidden)" in picture.listed[0].text
    assert "; 1 hidden;" in picture.description


def test_labels_of_bunched_plans_take_rows_of_their_own_and_never_overlap():
    bunched = [
        plan(f"plan {n}", NOW + timedelta(days=2, hours=n), content="a plan with a long name")
        for n in range(1, 6)
    ]
    picture = plans_build(bunched, now=NOW, zone=AMSTERDAM)
    for frame in (WIDE, NARROW):
        _, marks = marks_of(picture, frame)
        placed = list(marks.values())
        assert len({mark.row for mark in placed}) > 1
        for index, first in enumerate(placed):
            assert len(first.label) <= frame.label_chars
            assert first.label_left >= 0 and first.label_right <= frame.width
            for second in placed[index + 1 :]:
                if first.row == second.row:
                    assert (
                        first.label_right <= second.label_left
                        or second.label_right <= first.label_left
                    )
                else:
                    assert first.label_y != second.label_y


def test_a_far_off_due_is_drawn_at_the_right_edge_with_its_date():
    picture = plans_build(
        [
            plan("plan 1", NOW + timedelta(days=3)),
            plan("plan 2", NOW + timedelta(days=400)),
        ],
        now=NOW,
        zone=AMSTERDAM,
    )
    layout, marks = marks_of(picture)
    assert marks["plan 2"].far and not marks["plan 1"].far
    assert marks["plan 2"].x == WIDE.plot_right
    assert marks["plan 2"].label.endswith("→ 4 Apr 2028")
    assert marks["plan 2"].anchor == "end"
    # The axis stops at its most, 90 days on, whatever lies beyond.
    assert "to Sun 30 May 09:00" in picture.description
    assert marks["plan 1"].x == pytest.approx(WIDE.left + WIDE.plot_width * 3 / 90, abs=0.1)
    assert layout.ticks[-1].x <= WIDE.plot_right
    assert "Tue 4 Apr 2028" in marks["plan 2"].title


@pytest.mark.django_db(databases="__all__")
def test_the_page_of_a_done_consultation_draws_the_picture(admin_client, settings):
    settings.COMPANION_OFFLINE = True
    time_zone_set(name=ZONE)
    working_memory_create(
        type="plan",
        content="call the physio",
        actor="luna",
        at=timezone.now(),
        turn=1,
        due=timezone.now() + timedelta(days=2),
        hidden=True,
    )
    asked = Consultation.objects.create(question="a training plan", asked_by="admin")
    consultation = consultation_run(consultation_id=asked.pk)

    page = admin_client.get(
        reverse("admin:compass_consultation_change", args=[consultation.pk])
    ).text

    assert page.count('class="compass-plans-svg') == 2
    assert 'id="compass-plans-wide"' in page and 'id="compass-plans-narrow"' in page
    assert page.index("The plans ahead") < page.index("<h2>Proposals</h2>")
    assert "call the physio · hidden" in page
    pending = '<g class="compass-plans-mark compass-plans-in-proposed compass-plans-pending'
    assert page.count(pending) == 6  # three, drawn wide and narrow
    assert page.count("<li>Proposed: plan ") == 3
    assert "<li>In working memory: wm " in page
