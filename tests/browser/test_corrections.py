"""Correcting the record in the chat, in a real browser on a desktop and on a phone: a message
edited, given to another identity, taken back and restored, the original a tap away, and the
next turn's context following it."""

import pytest
from playwright.sync_api import expect

from bench.fakeapi import FakeReply
from events.models import Correction, Event, Purge
from tests.browser.conftest import BROWSER_DB, accessibility_problems

pytestmark = BROWSER_DB

LATEST_USER = "#history article.message.user >> nth=-1"
LATEST_COMPANION = "#history article.message.companion >> nth=-1"


def said(page, fake_api, text: str, reply: str) -> None:
    fake_api.push(FakeReply(f"<say>{reply}</say>"))
    page.locator("#input").click()
    page.keyboard.type(text)
    page.locator("#send").click()
    expect(page.locator(LATEST_COMPANION)).to_contain_text(reply)


def sent_user_text(fake_api) -> str:
    return "".join(block["text"] for block in fake_api.requests[-1]["messages"][0]["content"])


@pytest.mark.usefixtures("worker")
def test_a_message_is_edited_given_to_another_and_its_first_words_are_a_tap_away(
    fake_api, page, screenshot
):
    page.goto("/")
    said(page, fake_api, "my sister Mara phoned about the quince jam", "How is she?")

    message = page.locator(LATEST_USER)
    first_name = message.locator(".name").inner_text()
    other = "renki" if first_name != "renki" else "luna"
    message.get_by_text("correct", exact=True).click()
    expect(message.get_by_label("Edit")).to_have_value("my sister Mara phoned about the quince jam")
    message.get_by_label("Edit").fill("my sister Maren phoned about the plum jam")
    message.get_by_role("button", name="Save the edit").click()

    message = page.locator(LATEST_USER)
    expect(message).to_contain_text("my sister Maren phoned about the plum jam")
    expect(message.locator(".corrected")).to_have_text("· edited")
    message.get_by_text("as first written").click()
    expect(message.locator("details.original")).to_contain_text("quince")

    message.get_by_text("correct", exact=True).click()
    message.get_by_label("Sent as").select_option(other)
    message.get_by_role("button", name="Give it to them").click()
    expect(page.locator(LATEST_USER).locator(".name")).to_have_text(other)
    expect(page.locator(LATEST_USER)).to_contain_text(f"· was {first_name}")
    page.locator(LATEST_USER).get_by_text("correct", exact=True).click()
    expect(page.locator(LATEST_USER).get_by_label("Edit")).to_have_value(
        "my sister Maren phoned about the plum jam"
    )
    assert not accessibility_problems(page)
    screenshot(page, "chat-corrected-desktop")

    said(page, fake_api, "and then?", "Then the jam.")
    sent = sent_user_text(fake_api)
    assert f"{other}: my sister Maren phoned about the plum jam" in sent
    assert "quince" not in sent
    assert [c.kind for c in Correction.objects.order_by("id")] == ["edit", "attribution"]


@pytest.mark.usefixtures("worker")
def test_a_message_taken_back_on_a_phone_leaves_the_next_context_and_comes_back(
    fake_api, phone_page, screenshot
):
    page = phone_page
    page.goto("/")
    said(page, fake_api, "the safe code is 4471", "Noted.")

    message = page.locator(LATEST_USER)
    message.get_by_text("correct", exact=True).tap()
    message.get_by_role("button", name="Take it back").tap()

    message = page.locator(LATEST_USER)
    expect(message).to_contain_text("· taken back")
    expect(message.locator(".segment").first).to_be_hidden()
    message.get_by_text("what it said").tap()
    expect(message.locator("details.original")).to_contain_text("4471")
    assert not accessibility_problems(page)
    screenshot(page, "chat-taken-back-phone")

    said(page, fake_api, "what was that number?", "I don't have one.")
    assert "4471" not in sent_user_text(fake_api)

    message = page.locator("#history article.message.retracted")
    message.get_by_text("correct", exact=True).tap()
    message.get_by_role("button", name="Restore it").tap()
    expect(page.locator("#history article.message.retracted")).to_have_count(0)
    expect(page.locator("#history")).to_contain_text("the safe code is 4471")


@pytest.mark.usefixtures("worker")
def test_the_owner_purges_a_message_taken_back_on_a_phone(fake_api, phone_page, screenshot):
    page = phone_page
    page.goto("/")
    said(page, fake_api, "my bank password is Zebra-88-quartz", "Please change it.")
    message = page.locator(LATEST_USER)
    message.get_by_text("correct", exact=True).tap()
    message.get_by_role("button", name="Take it back").tap()

    message = page.locator("#history article.message.retracted")
    message.get_by_text("correct", exact=True).tap()
    message.get_by_role("link", name="Purge its text…").tap()
    expect(page.get_by_role("heading", name="Purge message")).to_be_visible()
    expect(page.get_by_text("backups and exports already made")).to_be_visible()
    assert not accessibility_problems(page)
    screenshot(page, "purge-phone")
    page.get_by_role("button", name="Purge its text").tap()

    expect(page.locator("#composer-error")).to_contain_text("its text is gone")
    assert "Zebra-88-quartz" not in page.content()
    assert "Zebra-88-quartz" not in Event.objects.get(pk=Purge.objects.get().event_id).content


@pytest.mark.usefixtures("worker")
def test_a_reply_is_asked_for_again_and_the_first_chosen_back(fake_api, page, screenshot):
    page.goto("/")
    said(page, fake_api, "tell me a joke", "Why did the owl stay in?")

    fake_api.push(FakeReply("<say>A seal walks into a club.</say>"))
    page.locator(LATEST_COMPANION).get_by_role("button", name="again").click()
    expect(page.locator(LATEST_COMPANION)).to_contain_text("A seal walks into a club.")
    reply = page.locator(LATEST_COMPANION)
    expect(reply.locator(".reply-place")).to_have_text("2 of 2")
    expect(page.locator("#history")).not_to_contain_text("owl")
    assert not accessibility_problems(page)
    screenshot(page, "again-desktop")

    reply.get_by_role("button", name="The reply before this one").click()

    reply = page.locator(LATEST_COMPANION)
    expect(reply).to_contain_text("Why did the owl stay in?")
    expect(reply.locator(".reply-place")).to_have_text("1 of 2")
    said(page, fake_api, "go on", "It was cold out.")
    sent = sent_user_text(fake_api)
    assert "owl" in sent and "seal" not in sent
    # Only the newest reply can be asked for again: the older one's "again" went as it came.
    expect(page.get_by_role("button", name="again")).to_have_count(1)
    expect(page.locator(LATEST_COMPANION).get_by_role("button", name="again")).to_be_visible()
    expect(page.locator(".reply-choice", has_text="1 of 2")).to_be_visible()
