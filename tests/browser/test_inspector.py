"""The context inspector in a real browser: from a reply on the chat page, its "why?" leads to
the page that shows why she knew what she knew, on a desktop and on a phone."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from bench.fakeapi import FakeReply
from events.models import Turn
from gem.models import WorkingMemory
from tests.browser.conftest import BROWSER_DB, accessibility_problems

pytestmark = BROWSER_DB

LATEST_COMPANION = "#history article.message.companion >> nth=-1"


@pytest.fixture
def remembered(settings):
    """A pin that fits the small Lingering budget, one it leaves no room for and a feeling
    faded under the floor."""
    settings.BUDGET_WORKING_MEMORY = 20
    now = timezone.now()
    for type_, content, age in [
        ("pin", "tea without sugar, always", timedelta(0)),
        ("pin", "the blue umbrella by the door", timedelta(minutes=5)),
        ("feeling", "restless", timedelta(hours=16)),
    ]:
        WorkingMemory.objects.create(
            type=type_, content=content, turn=0, created_at=now - age, refreshed_at=now - age
        )


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_a_reply_leads_to_why_she_knew_what_she_knew(
    fake_api, worker, remembered, request, screenshot, size
):
    fake_api.push(FakeReply("<say>Hello, luna.</say>"), FakeReply("<say>Still here.</say>"))
    page = request.getfixturevalue("page" if size == "desktop" else "phone_page")
    for message, reply in [("hello", "Hello, luna."), ("are you there?", "Still here.")]:
        page.locator("#input").click()
        page.keyboard.type(message)
        page.locator("#send").click()
        expect(page.locator(LATEST_COMPANION)).to_contain_text(reply)
    second = Turn.objects.order_by("pk").last()
    why = page.locator(LATEST_COMPANION).get_by_role("link", name="why?")
    expect(why).to_be_visible()
    expect(page.locator(LATEST_COMPANION)).to_have_attribute("data-turn", str(second.pk))

    page.reload()  # the history draws the replies too, each with its link
    expect(page.locator("#history a.why")).to_have_count(2)
    assert not accessibility_problems(page)
    page.locator(LATEST_COMPANION).get_by_role("link", name="why?").click()

    expect(page).to_have_url(re.compile(rf"/admin/events/turn/{second.pk}/context/$"))
    expect(page.get_by_role("heading", name="Sections and budgets")).to_be_visible()
    lingering = page.locator(".inspector-bars li", has_text="Lingering")
    expect(lingering).to_contain_text("of 20 tokens")
    bar = lingering.locator("svg.inspector-bar")
    expect(bar).to_be_visible()
    used = float(bar.locator(".inspector-bar-used").get_attribute("width"))
    percent = re.search(r"\((\d+)%\)", lingering.inner_text())[1]
    assert 0 < used < 100 and abs(used - int(percent)) < 1  # the bar draws the figures' share
    assert bar.bounding_box()["width"] > 0.5 * page.viewport_size["width"]
    left = page.locator(".inspector-left li")
    expect(left.filter(has_text="the blue umbrella")).to_contain_text(
        re.compile(r"cut by the budget at rank 2 \(needed \d+ tokens, \d+ left\)")
    )
    expect(left.filter(has_text="restless")).to_contain_text("under the 0.01 floor (score")
    expect(page.get_by_text("After the whole system prompt")).to_be_visible()
    expect(page.locator(".inspector-diff summary", has_text="Recent")).to_be_visible()

    text = page.locator("details.inspector-text", has_text="User message")
    text.locator("summary").click()
    expect(text.locator("pre")).to_contain_text("## Message")
    assert not page.evaluate(
        "() => document.documentElement.scrollWidth > document.documentElement.clientWidth"
    ), f"the page is wider than the {size}'s screen"
    assert not accessibility_problems(page)
    text.locator("summary").click()
    page.evaluate("() => window.scrollTo(0, 0)")
    screenshot(page, size)

    page.get_by_role("link", name="← turn 1").click()
    expect(page).to_have_url(re.compile(r"/context/$"))
    expect(page.get_by_text("No earlier turn kept a snapshot to compare with.")).to_be_visible()
