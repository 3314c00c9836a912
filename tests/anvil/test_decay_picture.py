import re
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from zoneinfo import ZoneInfo

import pytest
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from anvil.decay_picture import NARROW, WIDE, picture_build, turn_counter
from events.models import Event, Turn
from gem import decay
from gem.models import WorkingMemory
from gem.selectors import gem_current, working_memory_scores
from gem.state import TURN_COUNTER, state_set
from gem.zone import TIME_ZONE

NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
H = timedelta(hours=1)
UTC_ZONE = ZoneInfo("UTC")


def an_item(type="thought", **fields):
    return SimpleNamespace(
        **{
            "pk": 7,
            "type": type,
            "status": "active",
            "refreshed_at": NOW - 6 * H,
            "turn": 10,
            "due": None,
            "resolved_at": None,
            "hidden": False,
            **fields,
        }
    )


# A turn an hour since the thought's anchor six hours ago: the counter went 10 to 16.
HOURLY = [(NOW - 6 * H + n * H, 10 + n) for n in range(1, 7)]


def build(item, *, history=HOURLY, current_turn=16, pressure=0.0, zone=UTC_ZONE):
    return picture_build(
        item, now=NOW, current_turn=current_turn, history=history, pressure=pressure, zone=zone
    )


def svg(picture, frame=WIDE) -> str:
    """The rendered SVG of one of the picture's two sizes."""
    html = render_to_string("admin/gem/workingmemory/_decay.html", {"picture": picture})
    found = re.search(rf'<svg [^>]*id="anvil-decay-{frame.name}".*?</svg>', html, re.S)
    assert found, html
    return found.group(0)


def x_of(moment, *, start, end, frame=WIDE) -> float:
    return round(frame.left + frame.plot_width * ((moment - start) / (end - start)), 1)


def path_points(path: str) -> list[tuple[float, float]]:
    return [tuple(map(float, pair.split(","))) for pair in re.findall(r"[\d.]+,[\d.]+", path)]


pure = pytest.mark.store_free


def test_a_hidden_plan_is_drawn_at_nothing_until_its_window_opens():
    due = NOW + 100 * H
    shown = build(an_item("plan", refreshed_at=NOW - 6 * H, turn=0, due=due))
    hidden = build(an_item("plan", refreshed_at=NOW - 6 * H, turn=0, due=due, hidden=True))

    assert shown.summary.startswith("Now 0.08")
    assert hidden.summary.startswith("Now under 0.001 ")
    assert hidden.layouts[0].past_path != shown.layouts[0].past_path


@pure
@pytest.mark.parametrize("frame", [WIDE, NARROW])
def test_it_draws_the_floor_at_a_hundredth_on_a_log_scale_of_three_decades(frame):
    picture = build(an_item())
    layout = picture.layouts[[WIDE, NARROW].index(frame)]
    assert [level.label for level in layout.levels] == ["1", "0.1", "0.01", "0.001"]
    two_thirds_down = round(frame.top + frame.plot_height * 2 / 3, 1)
    assert layout.floor_y == two_thirds_down
    drawn = svg(picture, frame)
    floor = re.search(r'<g class="anvil-decay-floor">\s*<line ([^>]*)/>', drawn).group(1)
    assert f'y1="{two_thirds_down}" y2="{two_thirds_down}"' in floor
    assert "out of the context below 0.01" in drawn


@pure
def test_it_marks_now_where_the_real_past_meets_the_projection():
    picture = build(an_item())
    layout = picture.layouts[0]
    (now,) = [marker for marker in layout.markers if marker.kind == "now"]
    past, ahead = path_points(layout.past_path), path_points(layout.ahead_path)
    assert past[-1] == ahead[0]
    assert past[-1][0] == now.x
    # The thought: six hours and six turns since its anchor.
    score = decay.score(
        type="thought", refreshed_at=NOW - 6 * H, now=NOW, created_turn=10, current_turn=16
    )
    assert picture.summary == (f"Now {score:.3f}; falls under 0.01 in about 2 days / 12 turns.")
    assert "about 6 a day" in picture.caption
    assert '<g class="anvil-decay-marker anvil-decay-now">' in svg(picture)
    assert 'class="anvil-decay-ahead"' in svg(picture)


@pure
def test_it_gives_the_svg_a_title_a_description_and_the_summary():
    picture = build(an_item())
    drawn = svg(picture)
    assert 'role="img"' in drawn
    assert 'aria-labelledby="anvil-decay-wide-title anvil-decay-wide-desc"' in drawn
    assert '<title id="anvil-decay-wide-title">Decay of working-memory item #7</title>' in drawn
    description = re.search(r'<desc id="anvil-decay-wide-desc">(.*?)</desc>', drawn, re.S)
    assert "log scale from 1 down to 0.001" in description.group(1)
    assert picture.summary in description.group(1)


@pure
def test_it_counts_the_past_turns_from_the_turn_rows_and_the_future_at_their_pace():
    anchor = NOW - 6 * H
    counter = turn_counter(
        [(anchor - H, 9), *HOURLY, (NOW, 15)],  # numbers out of order never make it fall
        created_turn=10,
        anchor=anchor,
        now=NOW,
        current_turn=16,
        pace=0.5,
    )
    assert counter(anchor) == 10
    assert counter(anchor + 30 * timedelta(minutes=1)) == 10
    assert counter(anchor + H) == 11
    assert counter(anchor + 3.5 * H) == 13
    assert counter(NOW) == 16
    assert counter(NOW + 4 * H) == 18
    past_and_ahead = [counter(anchor + n * H / 4) for n in range(100)]
    assert past_and_ahead == sorted(past_and_ahead)


@pure
def test_it_shows_the_turn_counter_under_each_time_and_in_each_points_title():
    layout = build(an_item()).layouts[0]
    assert [tick.turn for tick in layout.x_ticks][:2] == ["turn 16", "≈ turn 19"]
    assert layout.x_ticks[0].time == "10 Mar 12:00"
    titles = [dot.title for dot in layout.dots]
    assert "Tue 10 Mar 12:00, turn 16: score 0.420" in titles
    # 18 hours and 9 turns after the anchor: 0.5 ** (18 / 12) * 0.5 ** (9 / 8) ≈ 0.162.
    assert "Wed 11 Mar 00:00, turn 19 (projected): score 0.162" in titles
    assert len(titles) == len(set(titles))


@pure
def test_it_draws_a_plans_phases_as_labelled_bands_in_order_and_marks_its_due():
    due = NOW + 30 * H
    item = an_item("plan", refreshed_at=NOW - 72 * H, turn=0, due=due)
    picture = build(item)
    layout = picture.layouts[0]
    assert [band.name for band in layout.bands] == ["drop", "floor", "rise", "grace", "fall"]
    for band, after in zip(layout.bands, layout.bands[1:], strict=False):
        assert band.x + band.width == pytest.approx(after.x, abs=0.11)
    assert layout.bands[-1].x + layout.bands[-1].width == pytest.approx(WIDE.plot_right, abs=0.11)
    (due_marker,) = [marker for marker in layout.markers if marker.kind == "due"]
    rise, grace = layout.bands[2], layout.bands[3]
    assert due_marker.x == grace.x == pytest.approx(rise.x + rise.width, abs=0.11)
    drawn = svg(picture)
    for label in ("drop", "floor", "rise to due", "grace", "fall"):
        assert f"<title>{label}</title>" in drawn
    assert [phase.label for phase in picture.phases] == [
        "drop",
        "floor",
        "rise to due",
        "grace",
        "fall",
    ]
    assert picture.phases[-1].when.startswith("from ")
    assert picture.summary.startswith("Now 0.")
    assert "(rise to due); due Wed 11 Mar 18:00, in 30 hours; falls under 0.01 in" in (
        picture.summary
    )
    assert "a plan with a due date does not count turns" in picture.caption


@pure
def test_it_names_in_the_list_a_phase_too_narrow_to_label_in_the_picture():
    item = an_item("plan", refreshed_at=NOW - H, turn=15, due=NOW + 8 * H)
    picture = build(item)
    narrow = picture.layouts[1]
    assert not next(band for band in narrow.bands if band.name == "drop").shows_label
    assert "drop" in [phase.name for phase in picture.phases]


@pure
@pytest.mark.parametrize(
    ("item", "why"),
    [
        (an_item("secret"), "A secret never decays: its score stays at 1"),
        (an_item("plan"), "A plan without a due date never decays"),
    ],
)
def test_it_draws_a_flat_line_and_says_why_for_what_never_decays(item, why):
    picture = build(item)
    assert picture.summary.startswith(why)
    assert "The line stays at 1." in picture.caption
    for layout in picture.layouts:
        heights = {y for _, y in path_points(layout.past_path + layout.ahead_path)}
        assert heights == {layout.frame.top}
        assert not layout.bands


@pure
def test_it_draws_a_resolved_item_up_to_when_it_left():
    left = NOW - 2 * H
    item = an_item("feeling", status="resolved", resolved_at=left)
    picture = build(item)
    layout = picture.layouts[0]
    assert layout.ahead_path == ""
    (marker,) = layout.markers
    assert marker.kind == "left"
    end = max(left, item.refreshed_at + H)
    assert (
        marker.x
        == path_points(layout.past_path)[-1][0]
        == x_of(left, start=item.refreshed_at, end=end)
    )
    score = decay.score(
        type="feeling", refreshed_at=item.refreshed_at, now=left, created_turn=10, current_turn=14
    )
    assert picture.summary == (
        f"Resolved on Tue 10 Mar 10:00 (turn 14), at a score of {score:.3f}: "
        "from then on it is out of the context."
    )
    assert "Dashed" not in picture.caption


@pure
def test_it_says_there_is_no_curve_when_it_does_not_know_when_an_item_left():
    picture = build(an_item(status="dropped"))
    assert picture.layouts == []
    assert "when it left working memory is not recorded" in picture.summary
    html = render_to_string("admin/gem/workingmemory/_decay.html", {"picture": picture})
    assert "<svg" not in html
    assert picture.summary in html


@pure
def test_it_says_since_when_an_item_is_under_the_floor():
    item = an_item("feeling", refreshed_at=NOW - 24 * H, turn=16)
    picture = build(item, history=[])
    # Halving every two hours, it went under 0.01 after 2·log2(100) hours: 13 h 17 min.
    assert picture.summary == (
        "Now under 0.001; under 0.01 since Tue 10 Mar 01:17 (turn 16), so it is left out of "
        "the context."
    )
    assert "with no turns: there were none in the last 7 days" in picture.caption
    layout = picture.layouts[0]
    assert path_points(layout.past_path)[-1][1] == layout.frame.plot_bottom  # kept at 0.001


@pure
def test_it_writes_times_in_the_owners_time_zone():
    picture = build(an_item(), zone=ZoneInfo("Asia/Tokyo"))
    layout = picture.layouts[0]
    assert layout.time_title == "time (Asia/Tokyo) and turn counter"
    assert layout.x_ticks[0].time == "11 Mar 00:00"  # midnight there, 15:00 UTC
    titles = " ".join(dot.title for dot in layout.dots)
    assert "Tue 10 Mar 21:00, turn 16: score" in titles  # now, 12:00 UTC


@pure
def test_it_draws_under_the_pressure_now_and_says_so():
    calm, pressed = build(an_item()), build(an_item(), pressure=1.0)
    score = decay.score(
        type="thought",
        refreshed_at=NOW - 6 * H,
        now=NOW,
        created_turn=10,
        current_turn=16,
        pressure=1.0,
    )
    assert pressed.summary.startswith(f"Now {score:.3f};")
    assert score < float(calm.summary[4:9])
    assert "the pressure on working memory now, 1.00" in pressed.caption
    assert "pressure" not in calm.caption


db = pytest.mark.django_db(databases="__all__")


@db
def test_the_items_page_shows_the_picture_with_the_score_the_list_shows(admin_client):
    now = timezone.now()
    for number in range(1, 7):
        said = Event.objects.create(content=f"message {number}", actor="luna")
        Turn.objects.create(event=said, number=10 + number, queued_at=now - (6 - number) * H)
    state_set(TURN_COUNTER, 16)
    state_set(TIME_ZONE, "Europe/Amsterdam")
    item = WorkingMemory.objects.create(
        type="thought", content="the blue cup", turn=10, refreshed_at=now - 6 * H
    )

    page = admin_client.get(reverse("admin:gem_workingmemory_change", args=[item.pk]))

    html = page.content.decode()
    (score,) = working_memory_scores(gem_current().working_memory, now=now, current_turn=16)
    summary = re.search(r'<p class="anvil-decay-summary">(.*?)</p>', html).group(1)
    assert summary.startswith(f"Now {score:.3f};")
    assert "/ 12 turns" in summary  # six turns in the last six hours: a day's pace of six
    assert html.count('role="img"') == 2  # wide, and for a phone
    assert "time (Europe/Amsterdam) and turn counter" in html
    assert 'href="/static/anvil/decay.css"' in html


@db
def test_the_add_page_has_no_picture(admin_client):
    page = admin_client.get(reverse("admin:gem_workingmemory_add"))
    assert page.status_code == 200
    assert "anvil-decay" not in page.content.decode()
