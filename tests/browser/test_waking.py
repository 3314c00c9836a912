"""What the person names wakes in the same turn, in a real browser: a SillyTavern lorebook
imported and applied, one of its entries named in the chat by one of its keys, and its text in
that very turn's context inspector."""

import pytest
from playwright.sync_api import expect

from bench.fakeapi import FakeReply
from gem.models import Fragment
from tests.anvil.test_bridges import FIXTURES
from tests.browser.conftest import BROWSER_DB, accessibility_problems

pytestmark = BROWSER_DB

LATEST_COMPANION = "#history article.message.companion >> nth=-1"


@pytest.mark.usefixtures("worker")
def test_a_lorebook_entry_named_in_the_chat_is_in_that_turns_context(fake_api, page, screenshot):
    page.goto("/admin/")
    page.get_by_role("link", name="Import from another companion").click()
    page.get_by_label("Format").select_option(label="SillyTavern (lorebook or chat)")
    page.get_by_label("File").set_input_files(FIXTURES / "lorebook.json")
    page.get_by_role("button", name="Preview").click()
    expect(page.get_by_text("Nothing has been written yet")).to_be_visible()
    page.get_by_role("button", name="Import").click()
    expect(page.get_by_role("status")).to_have_text("Done.")
    draft = (
        page.locator(".loom-call").filter(has_text="fragments from the SillyTavern lorebook").first
    )
    draft.get_by_role("button", name="Apply").click()
    expect(page.locator(".messagelist")).to_contain_text("changed.")
    assert Fragment.objects.filter(key="lighthouse").exists()
    assert not Fragment.objects.filter(key__iexact="maren").exists()  # disabled: left out

    fake_api.push(FakeReply("<say>The north pier, yes.</say>"))
    page.goto("/")
    page.locator("#input").click()
    page.keyboard.type("I dreamt the LAMP was lit again, and Maren waved")
    page.locator("#send").click()
    expect(page.locator(LATEST_COMPANION)).to_contain_text("The north pier, yes.")
    sent = "".join(block["text"] for block in fake_api.requests[-1]["messages"][0]["content"])
    assert "woken by “LAMP” in the message" in sent
    assert "Maren" not in sent.partition("## Message")[0]  # in the message alone

    page.locator(LATEST_COMPANION).get_by_role("link", name="why?").click()
    recalled = page.locator(".inspector-items li", has_text="lighthouse")
    expect(recalled).to_contain_text("woken by “LAMP” in the message")
    expect(recalled).to_contain_text("dark since the storm")
    assert not accessibility_problems(page)
    screenshot(page, "inspector-woken-desktop")
