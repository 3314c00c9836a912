"""The first run in a real browser: the chat page offers the set-up, the set-up saves who talks
here and the time zone (the browser's own by default), the offer goes once something has been
said; on a new installation, with no identities, the set-up asks for the person's name and the
companion's, and the chat opens with the companion's greeting."""

import pytest
from playwright.sync_api import expect

from events.models import Event
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
from tests.conftest import REPO

pytestmark = BROWSER_DB

OFFER = ".first-run-offer"
CHIPS = "#identity-chips .chip"
GREETING = (REPO / "gem" / "defaults" / "greeting.md").read_text(encoding="utf-8").strip()


def test_it_offers_the_set_up_until_something_is_said_and_saves_it(
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

    phone.locator("#input").tap()
    phone.keyboard.type("hello")
    phone.locator("#send").tap()
    expect(phone.locator("#history article.message.user .name")).to_have_text("hasuki")
    expect(phone.locator(OFFER)).to_have_count(0)  # gone as soon as something is said
    phone.reload()
    chat_open(phone)
    expect(phone.locator(OFFER)).to_have_count(0)
    said = Event.objects.count()  # the message, and the reply

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
    assert Event.objects.count() == said  # something was said before: no greeting

    phone.goto("/setup/")
    expect(phone.get_by_label("Your time zone")).to_have_value("Asia/Tokyo")
    screenshot(phone, "set-up-phone")
    assert accessibility_problems(phone) == []


@pytest.mark.fresh_install
def test_a_new_installation_set_up_opens_the_chat_with_the_companions_greeting(
    new_context, signed_in, screenshot
):
    desktop = signed_in(new_context(**DESKTOP)).new_page()
    phone = signed_in(new_context(**PHONE)).new_page()
    phone.goto("/setup/")
    expect(phone.get_by_placeholder("your name")).to_be_visible()
    expect(phone.get_by_placeholder("the companion's name")).to_be_visible()
    screenshot(phone, "phone")
    assert accessibility_problems(phone) == []

    desktop.goto("/")
    chat_open(desktop)
    expect(desktop.locator(CHIPS)).to_have_count(0)  # nobody's identities but the person's own
    desktop.locator(OFFER).get_by_role("link").click()
    expect(desktop.get_by_role("heading", name="Who talks here")).to_be_visible()
    desktop.get_by_placeholder("your name").fill("wren")
    desktop.get_by_placeholder("the companion's name").fill("sable")
    screenshot(desktop, "desktop")
    assert accessibility_problems(desktop) == []
    desktop.get_by_role("button", name="Save").click()

    chat_open(desktop)
    said = GREETING.replace("{name}", "sable")
    greeting = desktop.locator("#history article.message.companion")
    expect(greeting).to_have_count(1)
    expect(greeting).to_contain_text(said)
    expect(desktop.locator(CHIPS)).to_have_text(["wren"])
    expect(desktop.locator(OFFER)).to_have_count(0)
    screenshot(desktop, "greeted-desktop")

    phone.goto("/")
    chat_open(phone)
    expect(phone.locator("#history article.message.companion")).to_contain_text(said)
    phone.locator(".chat-menu > summary").tap()  # the other pages, folded on a phone
    set_up = phone.locator("nav.chat-nav").get_by_role("link", name="set-up")
    expect(set_up).to_be_in_viewport()
    box = set_up.bounding_box()
    assert box["height"] >= 44 and box["width"] >= 44  # a touch target
    screenshot(phone, "greeted-phone")
    set_up.tap()
    expect(phone.locator("#identity-rows input[name$='-name']").first).to_have_value("wren")
    assert list(Event.objects.values_list("actor", flat=True)) == ["sable"]
