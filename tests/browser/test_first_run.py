"""The first run in a real browser: a fresh install offers the set-up on the chat page, the
set-up saves who talks here and the time zone (the browser's own by default), and the offer
goes once something has been said."""

from playwright.sync_api import expect

from gem.models import Identity
from gem.zone import owner_time_zone
from tests.browser.conftest import (
    BROWSER_DB,
    DESKTOP,
    PHONE,
    accessibility_problems,
    chat_open,
    log_in,
)

pytestmark = BROWSER_DB

OFFER = ".first-run-offer"
CHIPS = "#identity-chips .chip"


def test_it_offers_the_set_up_saves_it_and_stops_offering_once_something_is_said(
    new_context, signed_in, screenshot
):
    desktop = signed_in(new_context(**DESKTOP, timezone_id="Asia/Tokyo")).new_page()
    phone = new_context(**PHONE, timezone_id="Asia/Tokyo").new_page()
    log_in(phone)  # a session of its own: the offer is put off per session
    for page, size in ((desktop, "desktop"), (phone, "phone")):
        page.goto("/")
        chat_open(page)
        expect(page.locator(OFFER)).to_be_visible()
        screenshot(page, f"chat-{size}")
        assert accessibility_problems(page) == [], size

    desktop.locator(OFFER).get_by_role("link").click()
    expect(desktop.get_by_role("heading", name="Who talks here")).to_be_visible()
    # Nothing chosen yet: the browser's own time zone.
    expect(desktop.get_by_label("Your time zone")).to_have_value("Asia/Tokyo")
    names = desktop.locator("#identity-rows input[name$='-name']")
    expect(names).to_have_count(8)  # the seed's seven and a blank row
    desktop.locator("#identity-rows li", has=desktop.locator("input[value=luna]")).get_by_label(
        "name"
    ).fill("moon")
    desktop.locator("#identity-rows li", has=desktop.locator("input[value=strah]")).get_by_label(
        "remove"
    ).check()
    desktop.get_by_role("button", name="add an identity").click()
    expect(names).to_have_count(9)
    names.nth(8).fill("two words")
    desktop.get_by_role("button", name="Save").click()
    expect(desktop.get_by_role("alert")).to_contain_text("“two words” is not one word")
    assert Identity.objects.filter(name="luna").exists()

    desktop.locator("#identity-rows input[value='two words']").fill("wren")
    screenshot(desktop, "set-up-desktop")
    assert accessibility_problems(desktop) == []
    desktop.get_by_role("button", name="Save").click()
    chat_open(desktop)
    expect(desktop.locator(CHIPS)).to_have_text(["hasuki", "renki", "moon", "chloe", "wren"])
    expect(desktop.locator(OFFER)).to_have_count(0)
    assert owner_time_zone() == "Asia/Tokyo"
    assert not Identity.objects.filter(name__in=["luna", "strah"]).exists()

    phone.goto("/setup/")
    expect(phone.get_by_label("Your time zone")).to_have_value("Asia/Tokyo")
    screenshot(phone, "set-up-phone")
    assert accessibility_problems(phone) == []
    phone.goto("/")
    chat_open(phone)
    expect(phone.locator(OFFER)).to_be_visible()
    phone.locator("#input").tap()
    phone.keyboard.type("hello")
    phone.locator("#send").tap()
    expect(phone.locator("#history article.message.user .name")).to_have_text("hasuki")
    expect(phone.locator(OFFER)).to_have_count(0)  # gone as soon as something is said
    phone.reload()
    chat_open(phone)
    expect(phone.locator(OFFER)).to_have_count(0)
