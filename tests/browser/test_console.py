"""The browser's console stays clean on every page a person uses and while the chat polls: no
error, no script that throws, nothing the Content-Security-Policy refuses.

Refusals are heard twice over: the console's "Refused to …" lines (errors, so caught with the
rest) and the page's ``securitypolicyviolation`` events, which every context records from before
the page's own scripts run (``csp_refusals`` in conftest.py)."""

from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import BrowserContext, ConsoleMessage, Page, expect

from events.models import Turn, TurnStatus
from heart import services, worker_state
from tests.browser.conftest import BROWSER_DB, DESKTOP, PHONE, chat_open, page_settled
from tests.browser.every_page import LENS_PAGES, SETUP_PAGE, a_lived_in_installation, anvil_pages

pytestmark = BROWSER_DB

POLLS = 3  # the polls watched: each swaps the reply, or the worker's dot, for a fresh copy


def heard(page: Page) -> list[str]:
    """What the page says in its console as errors, and every script error it throws."""
    said: list[str] = []

    def console(message: ConsoleMessage) -> None:
        if message.type == "error":
            said.append(f"{page.url}: {message.text}")

    page.on("console", console)
    page.on("pageerror", lambda error: said.append(f"{page.url}: {error}"))
    return said


def refused(page: Page) -> list[dict]:
    """The refusals the page recorded itself (the listener conftest.py puts in every page)."""
    return page.evaluate("() => window.cspRefusals")


def test_no_page_logs_an_error_or_a_refusal(
    new_context: Callable[..., BrowserContext], owner: User, signed_in, csp_refusals
):
    a_lived_in_installation(owner)
    pages = ["/", SETUP_PAGE, *anvil_pages(owner), *LENS_PAGES]
    errors, refusals = [], []
    for size, options in [("desktop", DESKTOP), ("phone", PHONE)]:
        page = signed_in(new_context(**options)).new_page()
        said = heard(page)
        for url in pages:
            assert page_settled(page, url).ok, url
            refusals += [f"{size} {url}: {seen}" for seen in refused(page)]
        errors += [f"{size} {line}" for line in said]
    assert not errors, "the console said:\n" + "\n".join(errors)
    assert not refusals and not csp_refusals, "refused:\n" + "\n".join(refusals + csp_refusals)


@pytest.fixture
def worker_stopped(monkeypatch) -> None:
    """Nothing answers a queued turn, as when the worker is stopped: the reply stays pending."""
    monkeypatch.setattr(services, "async_task", lambda *args, **kwargs: "not run")


def polls_of(page: Page, path: str) -> int:
    return page.evaluate(
        "path => performance.getEntriesByType('resource')"
        ".filter(e => new URL(e.name).pathname.startsWith(path)).length",
        path,
    )


@pytest.mark.parametrize("size", ["desktop", "phone"])
@pytest.mark.parametrize("answering", [False, True], ids=["waiting", "answering"])
def test_a_pending_reply_polls_without_an_error_or_a_refusal(
    new_context, signed_in, worker_stopped, csp_refusals, monkeypatch, size, answering
):
    """A reply waiting for the worker, or being answered: the reply and the worker's dot (which
    pulses while the worker answers) are polled and swapped for fresh copies, each kept in
    step with the last by the chat's script, and none of it is refused."""
    page = signed_in(new_context(**(DESKTOP if size == "desktop" else PHONE))).new_page()
    said = heard(page)
    page.goto("/")
    chat_open(page)
    page.locator("#input").fill("are you there?")
    page.locator("#send").click()
    pending = page.locator("#history article.message.companion.pending")
    expect(pending).to_be_visible()
    if answering:  # a worker runs (django-q2 records its cluster) and has taken the turn
        monkeypatch.setattr(worker_state, "_cluster_stats", lambda: ["a cluster"])
        Turn.objects.update(status=TurnStatus.RUNNING)
    dot_polls = polls_of(page, "/worker/")
    for _ in range(POLLS):
        turn_polls = polls_of(page, "/turns/")
        page.wait_for_function(
            "([turns, dots]) => performance.getEntriesByType('resource').filter("
            "e => e.name.includes('/turns/')).length > turns && performance"
            ".getEntriesByType('resource').filter(e => e.name.includes('/worker/')).length > dots",
            arg=[turn_polls, dot_polls],
        )
        dot_polls = polls_of(page, "/worker/")
    if answering:
        expect(page.locator("#worker-status")).to_have_attribute("data-state", "busy")
    expect(pending).to_be_visible()
    page.evaluate("() => true")  # a round trip: what the page reported has arrived
    assert not said, "the console said:\n" + "\n".join(said)
    assert not refused(page) and not csp_refusals, refused(page) + csp_refusals
