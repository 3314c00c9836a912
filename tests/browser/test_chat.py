"""The chat page in a real browser: signing in, sending, streaming, images, retries, history.

Each test clicks and types as a person would and waits with Playwright's auto-waiting
``expect`` (or ``wait_for_function``); the only pauses are the fake Messages API's own delays.
"""

import io
import re
from datetime import timedelta
from zoneinfo import ZoneInfo

import pytest
from django.conf import settings
from django.utils import timezone
from PIL import Image
from playwright.sync_api import Page, expect

from bench.fakeapi import FakeError, FakeReply
from events.models import Event, Turn
from gem.models import Fragment, Identity, WorkingMemory
from heart.ingest import event_record
from tests.browser.conftest import (
    BROWSER_DB,
    DESKTOP,
    PASSWORD,
    PHONE,
    accessibility_problems,
    chat_open,
    chat_page,
    log_in,
)

pytestmark = BROWSER_DB

LATEST_COMPANION = "#history article.message.companion >> nth=-1"

# Tests that talk to the fake Messages API ask for ``fake_api`` before ``page``: the page is
# opened when its fixture runs, and should show the companion online.


def send_with_ctrl_enter(page: Page, text: str) -> None:
    page.locator("#input").click()
    page.keyboard.type(text)
    page.keyboard.press("Control+Enter")


def article_ids(page: Page) -> list[int]:
    """The event ids of the messages on the page, top to bottom."""
    return page.locator("#history article.message[id^=event-]").evaluate_all(
        "articles => articles.map(a => Number(a.id.slice('event-'.length)))"
    )


def png(size=(64, 48), colour=(196, 168, 130)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, colour).save(buffer, format="PNG")
    return buffer.getvalue()


# --- Signing in and out -----------------------------------------------------------------------


def test_it_signs_in_and_says_when_the_password_is_wrong(context, owner):
    page = context.new_page()
    log_in(page, password="not the password")
    expect(page.get_by_role("alert")).to_have_text("That name and password did not match.")
    expect(page).to_have_url(re.compile(r"/accounts/login/$"))

    log_in(page, password=PASSWORD)
    expect(page).to_have_url(re.compile(r"/$"))
    expect(page.locator("#input")).to_be_visible()
    expect(page.get_by_role("heading", name="silentstar")).to_be_visible()


def test_it_sends_to_the_login_page_when_logged_out(context, owner):
    page = context.new_page()
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next=/$"))
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()

    log_in(page)
    chat_open(page)
    page.get_by_role("button", name="sign out").click()
    expect(page).to_have_url(re.compile(r"/accounts/login/$"))
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next=/$"))


# --- Sending and streaming --------------------------------------------------------------------


def test_it_streams_a_reply_to_a_plan_sent_as_luna(fake_api, worker, page, screenshot):
    reply = "I'll remind you, luna. Friday it is."
    # Four seconds of streaming: the page's polls see a part of it even on a busy machine.
    fake_api.push(FakeReply(f"<say>{reply}</say>", chunks=8, delay=0.5))
    expect(page.locator(".offline-badge")).to_have_count(0)

    page.locator("#identity-chips .chip[data-identity=luna]").click()
    expect(page.locator(".chip[data-identity=luna]")).to_have_attribute("aria-checked", "true")
    page.locator("#tag-buttons .tag[data-tag=plan]").click()
    expect(page.locator(".tag[data-tag=plan]")).to_have_attribute("aria-pressed", "true")
    sent_at = timezone.now()
    page.keyboard.type("call the pharmacy friday at 5pm")
    page.keyboard.press("Control+Enter")

    mine = page.locator("#history article.message.user").last
    expect(mine).to_contain_text("call the pharmacy friday at 5pm")
    expect(mine.locator(".knowledge.plan")).to_have_text("call the pharmacy friday at 5pm")
    expect(page.locator("#input")).to_be_empty()
    # Luna's colour (the page's nonced <style>, no style attributes) on her chip and message.
    identity = "el => getComputedStyle(el).getPropertyValue('--identity').trim()"
    luna = Identity.objects.get(name="luna").color
    assert page.locator(".chip[data-identity=luna]").evaluate(identity) == luna
    assert mine.evaluate(identity) == luna

    # Part of the reply shows before all of it: a non-empty prefix, shorter than the whole.
    partial = page.wait_for_function(
        """full => {
            const shown = document.querySelector("article.pending .segment.partial");
            const text = shown ? shown.textContent.trim() : "";
            return text && text.length < full.length && full.startsWith(text) ? text : null;
        }""",
        arg=reply,
    ).json_value()
    assert 0 < len(partial) < len(reply)
    screenshot(page, "desktop")  # mid-stream: the partial reply and the breathing mark

    expect(page.locator(LATEST_COMPANION)).to_contain_text(reply)
    expect(page.locator("article.pending")).to_have_count(0)
    expect(page.locator(".breathing")).to_have_count(0)

    event = Event.objects.order_by("id").first()
    assert event.content == "<luna><plan>call the pharmacy friday at 5pm</plan></luna>"
    assert event.actor == "luna"
    plan = WorkingMemory.objects.get(type="plan")
    due = plan.due.astimezone(ZoneInfo(settings.TIME_ZONE))
    assert (due.weekday(), due.hour, due.minute) == (4, 17, 0)  # a Friday, 17:00
    # The coming one: the first Friday after the day it was sent (gem/due.py), so on a Friday
    # morning a week and some hours on.
    assert 1 <= (due.date() - sent_at.astimezone(due.tzinfo).date()).days <= 7


def test_it_sends_an_image_and_shows_it(fake_api, worker, page, screenshot):
    fake_api.push(FakeReply("<say>What a warm colour.</say>", chunks=2))

    page.locator("#image-input").set_input_files(
        files=[{"name": "swatch.png", "mimeType": "image/png", "buffer": png()}]
    )
    preview = page.locator("#image-preview")
    expect(preview).to_be_visible()
    expect(preview.locator("img")).to_have_attribute("src", re.compile(r"^blob:"))
    page.locator("#input").click()
    page.keyboard.type("the yarn I found")
    page.locator("#send").click()

    expect(page.locator(LATEST_COMPANION)).to_contain_text("What a warm colour.")
    expect(preview).to_be_hidden()
    attached = page.locator("#history article.message.user img.attached")
    expect(attached).to_have_count(1)
    page.wait_for_function(
        "img => img.complete && img.naturalWidth > 0", arg=attached.element_handle()
    )
    assert attached.evaluate("img => [img.naturalWidth, img.naturalHeight]") == [64, 48]
    screenshot(page, "desktop")

    content = fake_api.requests[0]["messages"][0]["content"]
    images = [block for block in content if block["type"] == "image"]
    assert len(images) == 1
    assert images[0]["source"]["media_type"] == "image/png"


def test_it_shows_nothing_for_a_secret_reply(fake_api, worker, page):
    fake_api.push(FakeReply("<thought>she seems tired tonight</thought>", chunks=3, delay=0.05))

    send_with_ctrl_enter(page, "good night")

    secret = page.locator("#history article.message.companion.secret")
    expect(secret).to_have_count(1)
    expect(secret).to_be_hidden()
    expect(secret).to_be_empty()
    expect(page.get_by_text("she seems tired")).to_have_count(0)
    expect(page.locator(".breathing")).to_have_count(0)
    expect(page.locator("article.pending")).to_have_count(0)
    assert Turn.objects.get().status == "done"


def test_it_shows_a_failed_turn_and_retries_it_without_writing_twice(
    fake_api, worker, page, screenshot
):
    fake_api.push(FakeError(400, "messages: something is malformed"))

    send_with_ctrl_enter(page, "are you there?")

    failed = page.locator("#history article.message.companion.failed")
    expect(failed.locator(".reason")).to_be_visible()
    expect(failed.locator(".reason")).to_contain_text("rejected")
    retry = failed.get_by_role("button", name="retry")
    expect(retry).to_be_visible()
    screenshot(page, "desktop")

    fake_api.push(FakeReply("<say>I'm here now.</say>", chunks=3, delay=0.05))
    retry.click()

    expect(page.locator(LATEST_COMPANION)).to_contain_text("I'm here now.")
    expect(page.locator("article.failed")).to_have_count(0)
    expect(page.locator("article.pending")).to_have_count(0)
    assert Event.objects.count() == 2
    assert list(Event.objects.order_by("id").values_list("actor", flat=True)) == [
        "hasuki",
        "claude",
    ]
    turn = Turn.objects.get()
    assert (turn.status, turn.attempts) == ("done", 2)
    assert len(fake_api.requests) == 2


# --- The composer -----------------------------------------------------------------------------

CHOSEN = "#identity-chips .chip[aria-checked=true]"


def test_it_always_has_an_identity_chosen_and_sends_under_it(page, phone_page):
    for shown in (page, phone_page):
        expect(shown.locator(CHOSEN)).to_have_count(1)
    # Nothing said yet: the first of the person's identities.
    expect(page.locator(CHOSEN)).to_have_attribute("data-identity", "hasuki")

    luna = phone_page.locator(".chip[data-identity=luna]")
    luna.tap()
    luna.tap()  # the chosen chip, tapped again, stays chosen
    expect(phone_page.locator(CHOSEN)).to_have_attribute("data-identity", "luna")
    phone_page.locator("#tag-buttons .tag[data-tag=plan]").tap()
    phone_page.keyboard.type("water the plants tonight")
    phone_page.locator("#send").tap()
    expect(phone_page.locator("#history article.message.user .name")).to_have_text("luna")
    assert WorkingMemory.objects.get(type="plan").actor == "luna"

    # The desktop, a new page: the identity of the person's last message.
    page.reload()
    chat_open(page)
    expect(page.locator(CHOSEN)).to_have_attribute("data-identity", "luna")
    chosen = page.locator(CHOSEN)
    chosen.focus()
    page.keyboard.press("ArrowRight")
    expect(page.locator(CHOSEN)).to_have_attribute("data-identity", "chloe")
    expect(page.locator(".chip[data-identity=chloe]")).to_be_focused()
    assert list(Event.objects.order_by("id").values_list("actor", flat=True)) == ["luna", "claude"]


def test_the_offline_companion_recalls_what_was_asked_about_not_the_little_words(page, phone_page):
    Fragment.objects.create(key="physio", ambient="Thursday mornings, the left knee.")
    Fragment.objects.create(key="about", ambient="A fragment no question should bring back.")
    for shown, asked in (
        (page, "what do you remember about the physio?"),
        (phone_page, "remember that I hate cilantro"),
    ):
        for text in (asked, "and?"):
            shown.locator("#input").click()
            shown.keyboard.type(text)
            shown.locator("#send").click()
            expect(shown.locator("#input")).to_have_text("")
    # The next reply shows what the question brought back: the physio, never "about" or "I".
    expect(page.locator(LATEST_COMPANION)).to_contain_text("physio — “Thursday mornings")
    expect(page.locator(LATEST_COMPANION)).not_to_contain_text("about —")
    expect(phone_page.locator("#history article.message.companion")).to_have_count(2)
    expect(phone_page.locator(LATEST_COMPANION)).not_to_contain_text("Recalled")


def test_it_sends_on_enter_on_a_desktop_as_a_remembered_choice(page, phone_page):
    entered = page.locator("#input")
    expect(page.locator("#send-keys")).to_be_visible()
    expect(page.get_by_label("Enter sends")).to_be_checked()
    expect(page.locator("#send-hint")).to_have_text("Shift+Enter for a new line")
    entered.click()
    page.keyboard.type("first line")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("second line")
    page.keyboard.press("Enter")
    expect(page.locator("#history article.message.user")).to_have_count(1)
    expect(entered).to_be_empty()
    sent = Event.objects.order_by("id").first()
    assert sent.content == "<hasuki>first line\nsecond line</hasuki>"

    page.get_by_label("Enter sends").uncheck()
    expect(page.locator("#send-hint")).to_have_text("Ctrl+Enter sends")
    page.reload()
    chat_open(page)
    expect(page.get_by_label("Enter sends")).not_to_be_checked()
    entered.click()
    page.keyboard.type("a line")
    page.keyboard.press("Enter")
    page.keyboard.type("and another")
    expect(entered).to_contain_text("a line")
    assert page.evaluate("() => window.silentstar.serialise(document.getElementById('input'))") == (
        "a line\nand another"
    )
    assert Event.objects.count() == 2  # the message and the offline companion's answer

    # A touch screen: Enter makes a new line until the person chooses otherwise.
    expect(phone_page.get_by_label("Enter sends")).not_to_be_checked()
    phone_page.locator("#input").tap()
    phone_page.keyboard.type("on the phone")
    phone_page.keyboard.press("Enter")
    phone_page.keyboard.type("two lines")
    assert phone_page.evaluate(
        "() => window.silentstar.serialise(document.getElementById('input'))"
    ) == ("on the phone\ntwo lines")
    assert Event.objects.count() == 2


def test_it_keeps_the_phone_header_to_one_row_over_a_compact_composer(
    conversation, phone_page, screenshot
):
    phone_page.goto("/")
    chat_open(phone_page)
    header = phone_page.locator(".chat-header").bounding_box()
    composer = phone_page.locator("#composer").bounding_box()
    assert header["height"] <= 56, header
    assert composer["height"] <= 150, composer
    # One row, and nothing cut: every part of the header sits on one line inside the window.
    parts = phone_page.locator(
        ".chat-header h1, .chat-header .worker-dot, .chat-header .offline-badge, "
        ".chat-header .memory-link, .chat-header .chat-menu > summary"
    )
    # Read in one go in the page: the worker dot is swapped for a fresh one every 3 s, and one
    # read per part could catch it between the two.
    boxes = parts.evaluate_all("parts => parts.map(part => part.getBoundingClientRect().toJSON())")
    assert len(boxes) == 5
    middles = [box["y"] + box["height"] / 2 for box in boxes]
    assert max(middles) - min(middles) < 8, boxes
    assert all(box["x"] >= 0 and box["x"] + box["width"] <= 390 for box in boxes), boxes
    for button in ("#send", "#image-button", ".chip[data-identity=strah]", ".tag[data-tag=pin]"):
        box = phone_page.locator(button).bounding_box()
        assert box["x"] + box["width"] <= 390 and box["y"] + box["height"] <= 844, button
    expect(phone_page.get_by_label("Enter sends")).to_be_visible()
    # The other pages fold behind "menu", a tap away, and fold again on a tap elsewhere.
    expect(phone_page.get_by_role("link", name="Anvil")).to_be_hidden()
    phone_page.locator(".chat-menu > summary").tap()
    for name in ("set-up", "notifications", "Lens", "Anvil"):
        link = phone_page.get_by_role("link", name=name, exact=True)
        expect(link).to_be_visible()
        box = link.bounding_box()
        assert box["height"] >= 44 and box["x"] + box["width"] <= 390, (name, box)
    screenshot(phone_page, "phone")
    assert accessibility_problems(phone_page) == []
    phone_page.locator("#conversation").tap()
    expect(phone_page.get_by_role("link", name="Anvil")).to_be_hidden()


# --- History ----------------------------------------------------------------------------------


def test_it_loads_earlier_messages_page_by_page(page):
    start = timezone.now() - timedelta(hours=2)
    ids = [
        event_record(
            text=f"<luna>message number {n}</luna>", actor="luna", ts=start + timedelta(minutes=n)
        )[0].pk
        for n in range(70)
    ]
    page.goto("/")

    expect(page.locator("#history article.message")).to_have_count(30)
    assert article_ids(page) == ids[-30:]

    page.get_by_role("button", name="earlier").click()
    expect(page.locator("#history article.message")).to_have_count(60)
    assert article_ids(page) == ids[-60:]
    expect(page.locator("#history article.message").first).to_contain_text("message number 10")

    page.get_by_role("button", name="earlier").click()
    expect(page.locator("#history article.message")).to_have_count(70)
    assert article_ids(page) == ids
    expect(page.get_by_role("button", name="earlier")).to_have_count(0)


# --- The page around the conversation ---------------------------------------------------------


def test_it_stops_the_space_under_reduced_motion(new_context, signed_in):
    running = "() => window.silentstar.spaceRunning()"
    page = chat_page(signed_in(new_context(**{**DESKTOP, "reduced_motion": "no-preference"})))
    page.wait_for_function(running)

    page.emulate_media(reduced_motion="reduce")
    page.wait_for_function("() => !window.silentstar.spaceRunning()")
    assert page.evaluate(running) is False

    still = chat_page(signed_in(new_context(**DESKTOP)))
    assert DESKTOP["reduced_motion"] == "reduce" and still.evaluate(running) is False


def test_it_shows_the_offline_badge_only_when_offline(page, settings):
    expect(page.locator(".offline-badge")).to_be_visible()
    expect(page.locator(".offline-badge")).to_have_text("offline companion")
    assert page.locator(".offline-badge").evaluate("b => b.innerText") == "OFFLINE COMPANION"

    settings.ANTHROPIC_API_KEY = "test-key"
    settings.COMPANION_OFFLINE = False
    page.reload()
    expect(page.locator("#composer")).to_be_visible()
    expect(page.locator(".offline-badge")).to_have_count(0)


def test_it_shows_the_worker_dot(page):
    dot = page.locator("#worker-status")
    expect(dot).to_be_visible()
    expect(dot).to_have_attribute("data-state", re.compile(r"^(online|busy|offline)$"))
    expect(dot).to_have_attribute("title", re.compile(r"\w"))


# --- Screenshots (test-artifacts/screenshots/, to look at) ------------------------------------

CONVERSATION = [
    ("luna", "<luna>I finished the **blue** crewneck at last, *finally*.</luna>"),
    (
        "claude",
        "<claude><say>That's wonderful, luna. **Show me** the collar?</say>"
        "<do>leans in to look at the stitches</do>"
        "<narrate>The evening light settles on the yarn.</narrate></claude>",
    ),
    ("hasuki", "<hasuki><do>holds it up to the window</do> Like this. It's *soft*.</hasuki>"),
    (
        "claude",
        "<claude><say>It is. The rib is even all the way round.</say>"
        "<thought>she is proud of it</thought></claude>",
    ),
    ("luna", "<luna><plan>wash it gently on sunday</plan></luna>"),
]


@pytest.fixture
def conversation():
    start = timezone.now() - timedelta(minutes=30)
    for n, (actor, text) in enumerate(CONVERSATION):
        event_record(text=text, actor=actor, ts=start + timedelta(minutes=3 * n))


def test_it_screenshots_the_chat_on_desktop_and_phone(conversation, page, phone_page, screenshot):
    for shown, size in ((page, "desktop"), (phone_page, "phone")):
        shown.goto("/")
        expect(shown.locator("#history article.message")).to_have_count(5)
        expect(shown.locator("#history strong").first).to_have_text("blue")
        expect(shown.locator("#history em").first).to_have_text("finally")
        expect(shown.locator("#history .segment.do").first).to_be_visible()
        expect(shown.locator("#history .segment.narrate")).to_be_visible()
        expect(shown.get_by_text("she is proud of it")).to_have_count(0)
        shown.evaluate("document.fonts.ready")
        assert screenshot(shown, size).stat().st_size > 0


def test_it_screenshots_the_login_page_on_desktop_and_phone(new_context, screenshot):
    for size, extra in (("desktop", DESKTOP), ("phone", PHONE)):
        shown = new_context(**extra).new_page()
        shown.goto("/accounts/login/")
        expect(shown.get_by_role("button", name="Sign in")).to_be_visible()
        assert screenshot(shown, size).stat().st_size > 0


# --- The Content-Security-Policy ------------------------------------------------------------


def test_it_refuses_an_inline_script_and_style_attribute_on_the_chat_page(page, csp_refusals):
    """What a slip in escaping could let into the page does not run, and the recorder every
    browser test relies on sees it; the list is emptied after, as these refusals are the point."""
    page.evaluate(
        """() => {
          const script = document.createElement("script");
          script.textContent = "window.inlineScriptRan = true";
          document.head.append(script);
          document.getElementById("history").insertAdjacentHTML(
            "beforeend", '<p id="injected" style="color: rgb(255, 0, 0)">injected</p>'
          );
        }"""
    )
    page.wait_for_function("() => window.cspRefusals.length >= 2")
    assert page.evaluate("() => window.inlineScriptRan") is None
    assert page.locator("#injected").evaluate("p => getComputedStyle(p).color") != "rgb(255, 0, 0)"
    refused = "\n".join(csp_refusals)
    assert "'directive': 'script-src-elem'" in refused
    assert "'directive': 'style-src-attr'" in refused
    csp_refusals.clear()


# --- Nothing typed is lost --------------------------------------------------------------------


def test_what_is_typed_while_a_message_is_on_its_way_is_kept(page):
    held = []
    page.route(re.compile(r"/messages/$"), lambda route: held.append(route))
    page.locator("#input").click()
    page.keyboard.type("the first thought")
    page.keyboard.press("Enter")
    page.wait_for_function("() => document.querySelector('#composer').ariaBusy === 'true'")
    expect(page.locator("#input")).to_have_text("")  # it went: the input is the next one's
    page.keyboard.type("and a second one")
    assert len(held) == 1
    held[0].continue_()
    expect(page.locator("#history article.message.user")).to_contain_text("the first thought")
    expect(page.locator("#input")).to_have_text("and a second one")
    assert [e.content for e in Event.objects.filter(actor__in=["hasuki", "luna"])] == [
        "<hasuki>the first thought</hasuki>"
    ]


def test_a_message_the_server_never_got_comes_back_with_what_was_typed_since(page):
    held = []
    page.route(re.compile(r"/messages/$"), lambda route: held.append(route))
    page.locator("#input").click()
    page.keyboard.type("keep me")
    page.keyboard.press("Enter")
    page.wait_for_function("() => document.querySelector('#composer').ariaBusy === 'true'")
    page.keyboard.type("and me")
    held[0].abort()
    expect(page.locator("#composer-error")).to_contain_text("Your message is still here.")
    assert (
        page.evaluate("() => window.silentstar.serialise(document.getElementById('input'))")
        == "keep me\nand me"
    )
    assert Event.objects.count() == 0
