"""Imports from other companions in a real browser: a character card's preview, its import, its
draft and wake text applied; a Letta agent file whose speakers are chosen in the preview, one of
its memories promoted from the queue, and its conversation read on the chat page."""

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from events.models import Event
from gem.models import Fragment
from gem.selectors import wake_text_current
from tests.anvil.test_bridges import FIXTURES, card_png
from tests.browser.conftest import BROWSER_DB, DESKTOP, PHONE, accessibility_problems
from transfer.models import ImportRun

pytestmark = BROWSER_DB

SIZES = {"desktop": DESKTOP, "phone": PHONE}


@pytest.fixture
def card(tmp_path) -> Path:
    path = tmp_path / "seraphina.png"
    path.write_bytes(card_png())
    return path


def looked_at(page: Page, screenshot, name: str, size: str) -> None:
    """No serious accessibility problem, nothing wider than a phone, and a screenshot."""
    problems = accessibility_problems(page)
    assert not problems, problems
    if size == "phone":
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
    screenshot(page, f"{name}-{size}")


def preview_of(page: Page, path: Path, format: str) -> None:
    page.goto("/admin/")
    page.get_by_role("link", name="Import from another companion").click()
    page.get_by_label("Format").select_option(label=format)
    page.get_by_label("File").set_input_files(path)
    page.get_by_role("button", name="Preview").click()
    expect(page.get_by_text("Nothing has been written yet")).to_be_visible()


@pytest.mark.parametrize("size", SIZES)
def test_a_card_is_previewed_imported_and_its_proposals_applied(
    new_context, signed_in, card, screenshot, size
):
    page = signed_in(new_context(**SIZES[size])).new_page()
    preview_of(page, card, "character card (JSON, PNG or CHARX)")
    expect(page.get_by_role("heading", name="A draft of 1 fragment")).to_be_visible()
    expect(page.locator(".anvil-diff").first).to_contain_text("A brass lantern, dented")
    expect(page.get_by_role("heading", name="Who the companion is")).to_be_visible()
    looked_at(page, screenshot, "card-preview", size)

    page.get_by_role("button", name="Import").click()
    expect(page.get_by_role("status")).to_have_text("Done.")
    expect(page.locator(".anvil-plan").first).to_contain_text("1 draft proposed")
    expect(page.locator(".loom-call")).to_have_count(2)
    looked_at(page, screenshot, "card-run", size)
    assert not Fragment.objects.exists()

    draft = page.locator(".loom-call", has_text="1 fragment from the character card")
    draft.get_by_role("button", name="Apply").click()
    expect(page.locator(".messagelist")).to_contain_text("changed.")
    assert Fragment.objects.count() == 1
    expect(draft).to_contain_text("Applied by owner")

    wake = page.locator(".loom-call", has_text=" is, from the character card")
    wake.get_by_role("link", name="Edit").click()
    text = page.get_by_label("The text to apply")
    text.fill(text.input_value().replace("speaks softly", "hums to the lamp"))
    page.get_by_role("button", name="Preview").click()
    expect(page.locator(".anvil-diff")).to_contain_text("hums to the lamp")
    looked_at(page, screenshot, "card-wake-edit", size)
    page.get_by_role("button", name="Apply this text").click()
    expect(page.locator(".messagelist")).to_contain_text("the wake context has a new version")
    assert "A keeper of the north light who hums to the lamp" in wake_text_current("wake")
    decided = page.locator(".loom-call")  # back on the proposal's page
    expect(decided).to_contain_text("Applied by owner")
    expect(decided).to_contain_text("edited before applying")
    looked_at(page, screenshot, "card-proposal-applied", size)


@pytest.mark.parametrize("size", SIZES)
def test_a_letta_agents_speakers_are_chosen_its_memory_promoted_and_its_chat_read(
    new_context, signed_in, screenshot, size
):
    page = signed_in(new_context(**SIZES[size])).new_page()
    preview_of(page, FIXTURES / "letta_current.af", "Letta agent file (.af)")
    expect(page.get_by_role("heading", name="2 memories to stage as suggestions")).to_be_visible()
    expect(page.get_by_text("Lives by the harbour")).to_be_visible()
    expect(page.get_by_text("3 messages to log as events, 0 already here")).to_be_visible()
    expect(page.get_by_text("the Mirror would make")).to_be_visible()
    page.get_by_role("heading", name="A conversation").scroll_into_view_if_needed()
    looked_at(page, screenshot, "letta-preview", size)

    page.get_by_role("button", name="Import").click()  # the browser asks for the names first
    assert page.get_by_label("Nell").evaluate("select => select.validationMessage")
    expect(page.get_by_text("Nothing has been written yet")).to_be_visible()
    assert not Event.objects.exists()
    page.get_by_label("Nell").select_option("hasuki")
    page.get_by_label("Sam").select_option("claude")
    page.get_by_label("Keeper").select_option("y'lhara")
    page.get_by_role("button", name="Import").click()
    expect(page.get_by_role("status")).to_have_text("Done.")
    expect(page.locator(".anvil-plan").first).to_contain_text("3 messages logged as events")
    run = ImportRun.objects.get()
    assert run.finished_at is not None
    looked_at(page, screenshot, "letta-run", size)

    page.get_by_role("link", name="Memories imported, waiting in the suggestion queue").click()
    page.locator("#result_list tbody tr", has_text="Lives by the harbour").locator("th a").click()
    page.get_by_role("button", name="Save and promote").click()
    expect(page.locator(".messagelist")).to_contain_text("Promoted into working memory: “")

    page.goto(f"/admin/transfer/importrun/{run.pk}/change/")
    page.get_by_role("link", name="The imported conversation on the chat page").click()
    for actor, words in (("hasuki", "The lighthouse is dark again."), ("claude", "Then we light")):
        event = Event.objects.get(actor=actor, content__contains=words)
        expect(page.locator(f"#event-{event.pk}")).to_contain_text(words)
    assert Event.objects.count() == 3
