"""Writing first, in a real browser: the reasons turned on in the memory drawer, and her
message arriving in an open chat with the reason above it, one tap from its context."""

import re
from datetime import timedelta

from django.utils import timezone
from playwright.sync_api import expect

from events.models import Turn
from heart.nudges import nudge_reasons_on, nudges_decide
from heart.services import turn_submit
from heart.tasks import run_turns_task
from tests.browser.conftest import BROWSER_DB, accessibility_problems

pytestmark = BROWSER_DB


def test_she_writes_first_into_the_open_chat_for_a_reason_turned_on(phone_page, screenshot):
    page = phone_page
    said = turn_submit(
        text="<luna>good night</luna>",
        actor="luna",
        enqueue=False,
        at=timezone.now() - timedelta(days=5),
    )
    Turn.objects.filter(pk=said.pk).update(status="done")
    page.reload()

    page.locator("#memory-link").tap()
    drawer = page.locator("#drawer")
    reasons = drawer.get_by_role("group", name="Only for the reasons you allow:")
    reasons.get_by_label("after 3 days without a word from you").check()
    drawer.get_by_role("button", name="Save").tap()
    expect(drawer.locator(".drawer-notes")).to_contain_text("She may write first for a long")
    assert nudge_reasons_on() == {"silence"}
    drawer.get_by_role("button", name="Close the memory drawer").tap()

    nudge = nudges_decide(now=timezone.now().replace(hour=12) + timedelta(days=1))
    assert nudge is not None
    run_turns_task(nudge.turn_id)  # the offline companion writes it
    arrived = page.locator("#history article.message.companion", has_text="I wanted to write")
    expect(arrived).to_be_visible(timeout=10_000)  # brought by the dot's next look
    expect(arrived.locator(".wrote-first")).to_have_text(
        re.compile(r"^She wrote first because luna has not written for [56] days\.$")
    )
    assert not accessibility_problems(page)
    screenshot(page, "phone")
    arrived.get_by_role("link", name="why?").tap()
    expect(page.locator("#content")).to_contain_text("none: she wrote first, because")
