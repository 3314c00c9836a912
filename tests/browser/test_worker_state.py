"""The worker's state in words on the chat page, in a real browser on a desktop and a phone: a
reply waiting on a stopped worker says why, and the dot says when the server does not answer."""

import re

from playwright.sync_api import expect

from heart import services
from tests.browser.conftest import BROWSER_DB, accessibility_problems

pytestmark = BROWSER_DB

WORKER = re.compile(r"/worker/(\?|$)")  # the dot's look at the worker, whatever it asks after


def test_a_reply_waiting_on_a_stopped_worker_explains_itself_on_a_phone(
    phone_page, settings, monkeypatch, screenshot
):
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "sync": False}  # no worker runs
    monkeypatch.setattr(services, "async_task", lambda *args, **kwargs: "queued")
    page = phone_page
    page.reload()
    expect(page.locator("#worker-status .worker-words")).to_have_text("worker stopped")
    expect(page.locator("#worker-status .worker-words")).to_be_visible()
    page.locator("#input").tap()
    page.keyboard.type("are you there?")
    page.locator("#send").tap()
    pending = page.locator("article.message.pending")
    expect(pending.locator(".waiting-why")).to_contain_text(
        "Waiting: the worker is not running: messages wait until it starts"
    )
    expect(pending.locator(".waiting-why")).to_contain_text("Your message is kept.")
    page.wait_for_timeout(700)  # a poll or two of the pending reply, each swapping it
    expect(pending.locator(".waiting-why")).to_be_visible()
    assert not accessibility_problems(page)
    screenshot(page, "phone")


def test_the_dot_says_when_the_server_does_not_answer_and_recovers(page):
    status = page.locator("#worker-status")
    before = status.get_attribute("data-state")
    assert before in ("online", "busy", "offline")
    page.route(WORKER, lambda route: route.abort())
    words = status.locator(".worker-words")
    expect(words).to_have_text("no connection", timeout=10_000)
    expect(words).to_be_visible()
    expect(status).to_have_attribute(
        "title",
        "No answer from the server: your messages are kept on it, "
        "and this page carries on when it is back",
    )
    page.unroute(WORKER)
    expect(status).to_have_attribute("data-state", before, timeout=10_000)
    expect(words).not_to_have_text("no connection")
