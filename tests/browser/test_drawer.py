"""The memory drawer on the chat page, in a real browser on a desktop and on a phone: what
waits counted on its button, suggestions promoted and rejected in place, a lingering item
forgotten and gone from the next turn's context."""

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from bench.fakeapi import FakeReply
from events.models import Turn
from gem.services import working_memory_create
from mirror.models import TagSuggestion
from tests.browser.conftest import BROWSER_DB, accessibility_problems

pytestmark = BROWSER_DB

LATEST_COMPANION = "#history article.message.companion >> nth=-1"


def lingering(content: str, *, actor: str = "luna") -> int:
    return working_memory_create(
        type="pin", content=content, actor=actor, at=timezone.now(), turn=1
    ).item.pk


def proposed(content: str, *, subject: str = "luna") -> TagSuggestion:
    return TagSuggestion.objects.create(
        proposer="compass", type="pin", content=content, subject=subject
    )


@pytest.mark.usefixtures("worker")
def test_the_drawer_decides_suggestions_and_forgets_what_the_next_turn_no_longer_holds(
    fake_api, page, screenshot
):
    lingering("the blue kettle whistles at dawn")
    lingering("renki collects river stones", actor="renki")
    proposed("likes the smell of rain")
    proposed("a quiet week ahead", subject="renki")
    page.reload()

    link = page.locator("#memory-link")
    expect(link.locator(".memory-count")).to_have_text("2")
    link.click()
    drawer = page.locator("#drawer")
    expect(drawer).to_be_visible()
    expect(drawer.get_by_role("heading", name="Memory")).to_be_focused()
    expect(drawer).to_contain_text("the blue kettle whistles at dawn")
    expect(drawer).to_contain_text("2 suggestions to decide on")
    assert not accessibility_problems(page)
    screenshot(page, "desktop")

    rain = drawer.locator("article.drawer-card", has_text="likes the smell of rain")
    rain.get_by_role("button", name="Promote").click()
    expect(drawer.locator(".drawer-notes")).to_contain_text(
        "Now in working memory: “likes the smell of rain”"
    )
    expect(link.locator(".memory-count")).to_have_text("1")
    week = drawer.locator("article.drawer-card", has_text="a quiet week ahead")
    week.get_by_role("button", name="Reject").click()
    expect(drawer.locator(".drawer-notes")).to_contain_text("Rejected: “a quiet week ahead”")
    expect(link.locator(".memory-count")).to_have_count(0)

    kettle = drawer.locator("article.drawer-card", has_text="the blue kettle whistles")
    kettle.get_by_role("button", name="Forget “the blue kettle whistles at dawn”").click()
    expect(drawer.locator(".drawer-notes")).to_contain_text("Forgot “the blue kettle")
    expect(drawer.locator("article.drawer-card", has_text="the blue kettle")).to_have_count(0)
    page.keyboard.press("Escape")
    expect(drawer).to_be_hidden()

    fake_api.push(FakeReply("<say>Good morning.</say>"))
    page.locator("#input").click()
    page.keyboard.type("morning")
    page.locator("#send").click()
    expect(page.locator(LATEST_COMPANION)).to_contain_text("Good morning.")
    turn = Turn.objects.order_by("-pk").first()
    page.goto(f"/admin/events/turn/{turn.pk}/context/")
    inspector = page.locator("#content")
    expect(inspector).to_contain_text("Left out, and why")
    held, left_out = inspector.inner_text().split("Left out, and why", 1)
    assert "likes the smell of rain" in held and "renki collects river stones" in held
    assert "the blue kettle" not in held
    assert "the blue kettle whistles at dawn\nnot active: dropped" in left_out


def test_on_a_phone_the_drawer_fills_the_screen_filters_by_identity_promotes_and_forgets(
    phone_page, screenshot
):
    page = phone_page
    lingering("luna keeps a blue notebook")
    lingering("renki collects river stones", actor="renki")
    proposed("likes the smell of rain")
    page.reload()
    page.locator("#memory-link").tap()
    drawer = page.locator("#drawer")
    expect(drawer).to_contain_text("renki collects river stones")
    box = drawer.bounding_box()
    assert box["width"] >= 389
    drawer.get_by_label("Whose").select_option("luna")
    expect(drawer.get_by_role("heading", name="Memory · what luna holds")).to_be_visible()
    expect(drawer).to_contain_text("luna keeps a blue notebook")
    expect(drawer).not_to_contain_text("renki collects river stones")
    for button in drawer.get_by_role("button").all():
        if button.is_visible():
            assert button.bounding_box()["height"] >= 44, button.inner_text()
    assert not accessibility_problems(page)
    screenshot(page, "phone")
    rain = drawer.locator("article.drawer-card", has_text="likes the smell of rain")
    rain.get_by_role("button", name="Promote").tap()
    expect(drawer.locator(".drawer-notes")).to_contain_text("Now in working memory")
    notebook = drawer.locator("article.drawer-card", has_text="luna keeps a blue notebook")
    notebook.get_by_role("button", name="Forget “luna keeps a blue notebook”").tap()
    expect(drawer.locator(".drawer-notes")).to_contain_text("Forgot “luna keeps a blue notebook”")
    expect(drawer.locator("article.drawer-card", has_text="blue notebook")).to_have_count(0)
    drawer.get_by_role("button", name="Close the memory drawer").tap()
    expect(drawer).to_be_hidden()
    expect(page.locator("#memory-link")).to_be_focused()
