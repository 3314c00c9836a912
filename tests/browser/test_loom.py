"""The Loom in a real browser: a session's workspace, a photo from the phone's camera input into
the inbox, the Cataloguer's draft applied, the Weaver's pattern in the queue.

The companion is offline here, so the agents answer with their labelled placeholders; the calls
run as tasks inside the request (the test queue is synchronous) and the page shows them done.
"""

from io import BytesIO
from pathlib import Path

import pytest
from PIL import Image
from playwright.sync_api import BrowserContext, Page, expect

from gem.models import Fragment, FragmentEdge
from loom.models import InboxImage, LoomCall, Session
from loom.services import loom_call_start, loom_draft_apply
from loom.tasks import run_loom_call_task
from mirror.models import TagSuggestion
from tests.browser.conftest import BROWSER_DB, DESKTOP, PHONE, accessibility_problems

pytestmark = BROWSER_DB


@pytest.fixture
def lantern() -> Fragment:
    lantern = Fragment.objects.create(
        key="lantern", ambient="Her brass lantern.", inventory="- brass, dented"
    )
    shelf = Fragment.objects.create(key="shelf", ambient="The kitchen shelf.")
    FragmentEdge.objects.create(source=lantern, target=shelf, relation="kept on")
    return lantern


@pytest.fixture
def photo(tmp_path) -> Path:
    path = tmp_path / "lantern.jpg"
    buffer = BytesIO()
    Image.new("RGB", (64, 48), "goldenrod").save(buffer, format="JPEG")
    path.write_bytes(buffer.getvalue())
    return path


def no_serious_problems(page: Page) -> None:
    problems = accessibility_problems(page)
    assert not problems, problems


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_a_session_takes_a_camera_photo_and_applies_the_cataloguers_draft(
    new_context, signed_in, lantern, photo, screenshot, size
):
    desk: BrowserContext = signed_in(new_context(**(DESKTOP if size == "desktop" else PHONE)))
    page = desk.new_page()
    page.goto("/admin/loom/session/add/")
    page.get_by_label("Topic").fill("The lantern")
    page.get_by_role("button", name="Open the session").click()
    expect(page.get_by_role("heading", name="Session: The lantern")).to_be_visible()
    page.get_by_label("Fragment key").fill("lantern")
    page.get_by_role("button", name="Add", exact=True).click()
    expect(page.locator(".loom-fragments").get_by_role("link", name="lantern")).to_be_visible()

    phone = signed_in(new_context(**PHONE)).new_page()
    phone.goto("/admin/loom/inboximage/add/")
    camera = phone.get_by_label("Take or choose photos")
    assert camera.get_attribute("capture") == "environment"
    assert camera.get_attribute("accept") == "image/*"
    camera.set_input_files(photo)
    phone.get_by_role("button", name="Send to the inbox").click()
    expect(phone.get_by_text("1 photo in the inbox.")).to_be_visible()
    expect(phone.locator(".loom-photos img")).to_have_count(1)
    no_serious_problems(phone)
    screenshot(phone, "inbox-phone")
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390

    page.reload()
    page.locator(".loom-inbox").get_by_label("lantern.jpg").check()
    page.get_by_role("button", name="Take into this session").click()
    expect(page.get_by_text("Took 1 photo from the inbox.")).to_be_visible()
    expect(page.locator(".loom-photos img[alt='lantern.jpg']")).to_be_visible()
    assert not InboxImage.objects.exists()

    page.get_by_label("the Cataloguer").check()
    page.locator("#id_fragment_key").select_option("lantern")
    page.get_by_label("Question").fill("Check the panes against the photo")
    page.locator(".loom-call-form").get_by_label("lantern.jpg").check()
    page.get_by_role("button", name="Ask", exact=True).click()
    card = page.locator(".loom-call").first
    expect(card.locator(".loom-status")).to_have_text("done")
    expect(card).to_contain_text("Photos sent: 1")
    expect(card.locator(".anvil-diff")).to_contain_text("placeholder from the Cataloguer")
    assert Fragment.objects.get(key="lantern").inventory == "- brass, dented"
    no_serious_problems(page)
    screenshot(page, f"session-draft-{size}")
    card.get_by_role("button", name="Apply").click()
    expect(page.get_by_text("Applied the draft: lantern changed.")).to_be_visible()
    inventory = Fragment.objects.get(key="lantern").inventory
    assert inventory.startswith("- brass, dented\n- (offline Loom) placeholder from the Cataloguer")
    call = LoomCall.objects.get()
    assert [image.original_name for image in call.images.all()] == ["lantern.jpg"]

    page.get_by_label("the Weaver").check()
    page.get_by_role("button", name="Ask", exact=True).click()
    woven = page.locator(".loom-call").first
    expect(woven.locator(".loom-suggestions")).to_contain_text("placeholder pattern")
    pattern = TagSuggestion.objects.get()
    assert (pattern.proposer, pattern.status, pattern.type) == ("loom", "pending", "pattern")
    page.goto("/admin/mirror/tagsuggestion/")
    expect(page.locator("#result_list")).to_contain_text("placeholder pattern around lantern")
    no_serious_problems(page)
    screenshot(page, f"queue-loom-{size}")

    page.goto(f"/admin/loom/session/{Session.objects.get().pk}/change/")
    page.get_by_role("button", name="Close session").click()
    expect(page.get_by_text("it can be read, not changed")).to_be_visible()
    screenshot(page, f"session-closed-{size}")


def test_a_call_from_a_fragments_page(new_context, signed_in, lantern, screenshot):
    page = signed_in(new_context(**DESKTOP)).new_page()
    page.goto("/admin/gem/fragment/lantern/change/")
    page.get_by_role("link", name="Ask the Loom").click()
    page.get_by_label("the Researcher").check()
    page.get_by_label("Question").fill("Who made it?")
    page.get_by_role("button", name="Ask", exact=True).click()
    expect(page.locator(".loom-call .loom-status")).to_have_text("done")
    expect(page.locator(".loom-notes")).to_contain_text("(offline Loom)")
    page.get_by_role("link", name="Edit").click()
    page.get_by_label("The draft").fill(
        "# lantern\n\n## inventory\n\n- brass, dented\n- made in 1920\n"
    )
    page.get_by_role("button", name="Preview").click()
    expect(page.locator(".anvil-diff")).to_contain_text("made in 1920")
    no_serious_problems(page)
    screenshot(page, "call-edit-desktop")
    page.get_by_role("button", name="Apply this draft").click()
    expect(page.get_by_text("Applied the draft: lantern changed.")).to_be_visible()
    assert Fragment.objects.get(key="lantern").inventory == "- brass, dented\n- made in 1920"


def test_a_waiting_calls_card_shows_the_answer_when_it_comes(new_context, signed_in, lantern):
    call = loom_call_start(agent="weaver", fragment_key="lantern", question="", enqueue=False)
    page = signed_in(new_context(**PHONE)).new_page()
    page.goto(f"/admin/loom/loomcall/{call.pk}/change/")
    expect(page.locator(".loom-status")).to_have_text("waiting for a worker…")
    run_loom_call_task(call.pk)
    expect(page.locator(".loom-status")).to_have_text("done")
    expect(page.locator(".loom-suggestions")).to_contain_text("placeholder pattern")
    page.get_by_role("button", name="Drop").click()
    expect(page.get_by_text("Dropped the draft: nothing changed.")).to_be_visible()
    assert page.url.endswith(f"/admin/loom/loomcall/{call.pk}/change/")


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_a_second_draft_over_the_first_shows_both_changes_and_is_saved_against_today(
    new_context, signed_in, lantern, owner, screenshot, size
):
    first = loom_call_start(agent="cataloguer", fragment_key="lantern", question="The panes")
    second = loom_call_start(agent="cataloguer", fragment_key="lantern", question="The wick")
    loom_draft_apply(call_id=first.pk, user=owner, text=LoomCall.objects.get(pk=first.pk).draft)
    page = signed_in(new_context(**(DESKTOP if size == "desktop" else PHONE))).new_page()
    page.goto(f"/admin/loom/loomcall/{second.pk}/change/")
    page.get_by_role("button", name="Apply").click()
    expect(page.get_by_text("“lantern” changed since this draft was written")).to_be_visible()
    expect(page.locator(".anvil-conflict h4")).to_contain_text("inventory — conflict")
    expect(page.locator(".anvil-today")).to_contain_text("The panes")
    expect(page.get_by_role("button", name="Apply this draft")).to_be_disabled()
    no_serious_problems(page)
    screenshot(page, f"draft-conflict-{size}")
    if size == "phone":
        assert page.evaluate("document.documentElement.scrollWidth") <= 390

    text = page.get_by_role("textbox", name="The draft")
    kept = Fragment.objects.get(key="lantern").inventory  # the first draft's line with it
    text.fill(text.input_value().replace("- brass, dented\n", f"{kept}\n", 1))
    page.get_by_role("button", name="Save against today's text").click()
    expect(page.get_by_text("The text now says it was written against today's")).to_be_visible()
    page.get_by_role("button", name="Apply this draft").click()
    expect(page.get_by_text("Applied the draft: lantern changed.")).to_be_visible()
    inventory = Fragment.objects.get(key="lantern").inventory
    assert "The panes" in inventory and "The wick" in inventory
