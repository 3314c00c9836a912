"""Browser tests: Playwright drives Debian's Chromium against pytest-django's live server.

The live server runs in this process, in a thread, so settings changed here (the ``fake_api``
fixture's key and ``ANTHROPIC_BASE_URL``, the cache, the media folder) are what it sees. The
SQLite test databases are files (``tests/conftest.py``): the live server's threads, the worker
thread and the test each have their own connection, as in production.

Chromium is Debian's headless shell (``apt-get install -y chromium-headless-shell``): Chromium's
engine and headless mode without the desktop browser's window code, as Playwright itself runs
headless tests, at two thirds of the full browser's CPU time here. Never one from ``playwright
install``.
Screenshots go to ``test-artifacts/screenshots/`` (git ignores it).

Every page runs under the site's Content-Security-Policy (``SECURE_CSP``): each context records
what the browser refused, and a test with a refusal fails (``csp_refusals``).
"""

import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from axe_playwright_python.sync_playwright import Axe
from django.conf import settings
from django.db import connections
from django.test import Client
from playwright.sync_api import (
    BrowserContext,
    Page,
    Playwright,
    Request,
    Response,
    expect,
    sync_playwright,
)

from heart import services
from heart.tasks import run_turns_task
from tests.conftest import REPO, event_log_triggers_lifted

CHROMIUM = Path("/usr/bin/chromium-headless-shell")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    # Without these Chromium keeps calling home, and a closed network refuses every call.
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SCREENSHOTS = REPO / "test-artifacts" / "screenshots"
PASSWORD = "a browser test password"

# Pages open with reduced motion: the chat page's moving space, redrawn every frame in software,
# would otherwise take more than half of the browser's time while a test waits. The space
# itself is watched moving, and stopping, by test_chat's own test of reduced motion.
DESKTOP = {"viewport": {"width": 1280, "height": 900}, "reduced_motion": "reduce"}
PHONE = {
    "viewport": {"width": 390, "height": 844},
    "reduced_motion": "reduce",
    "device_scale_factor": 2,
    "is_mobile": True,
    "has_touch": True,
}
WORKER_JOIN_SECONDS = 15
PAGE_SETTLE_SECONDS = 30

# Every browser test: the live server needs committed data, so a transactional database, and
# `serialized_rollback` brings back what the migrations put in (the wake texts) after each
# test's flush; the identities come from tests/conftest.py's `source_identities`.
BROWSER_DB = pytest.mark.django_db(transaction=True, serialized_rollback=True, databases="__all__")


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict) -> dict:
    """Launch Debian's Chromium headless shell, quiet on the network."""
    if not CHROMIUM.exists():
        message = (
            f"The browser tests need Debian's Chromium headless shell at {CHROMIUM}: "
            "apt-get update && apt-get install -y chromium-headless-shell "
            "(never `playwright install`)."
        )
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return {**browser_type_launch_args, "executable_path": str(CHROMIUM), "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session")
def migrated_contents(django_db_setup) -> dict[str, str]:
    """What the test databases held after migrating (the wake texts), as pytest-django
    saved it for ``serialized_rollback``, read before Playwright starts (see below)."""
    return {
        alias: connections[alias]._test_serialized_contents
        for alias in connections
        if hasattr(connections[alias], "_test_serialized_contents")
    }


@pytest.fixture(scope="package")
def playwright(migrated_contents) -> Iterator[Playwright]:
    """Playwright for this package only (pytest-playwright keeps it for the whole session).

    Its sync API keeps an event loop running in the test's thread, and while that loop runs
    Django refuses synchronous database calls from this thread: stopped with the package, it
    leaves every test after the browser tests as it found them. The browser, its launch and
    the context options are overridden to match (pytest-playwright's own are session-wide);
    its ``new_context``, ``context`` and ``page`` fixtures work on top of them.
    """
    with sync_playwright() as started:
        yield started


@pytest.fixture(scope="package")
def browser(playwright: Playwright, browser_name: str, browser_type_launch_args) -> Iterator:
    browser = getattr(playwright, browser_name).launch(**browser_type_launch_args)
    yield browser
    browser.close()


@pytest.fixture(scope="package")
def browser_context_args(live_server) -> dict:
    """Every context opens the live server (relative URLs go there)."""
    return {"base_url": live_server.url}


# Put in every page before its own scripts: each refusal is kept on the page (``cspRefusals``)
# and handed to the test as it happens, so one on a page the test has since left is not lost.
CSP_LISTENER = """
window.cspRefusals = [];
document.addEventListener("securitypolicyviolation", (event) => {
  const seen = {
    directive: event.effectiveDirective,
    blocked: event.blockedURI,
    page: document.location.pathname,
    source: event.sourceFile ? event.sourceFile + ":" + event.lineNumber : "",
  };
  window.cspRefusals.push(seen);
  window.cspRefused(seen);
});
"""


@pytest.fixture(autouse=True)
def csp_refusals() -> Iterator[list[str]]:
    """What the browser refused under the Content-Security-Policy during the test: its
    ``securitypolicyviolation`` events and the console's "Refused to …" lines. Must stay empty;
    a test that provokes a refusal on purpose empties it when it has checked it."""
    refusals: list[str] = []
    yield refusals
    assert not refusals, "the Content-Security-Policy refused:\n" + "\n".join(refusals)


@pytest.fixture
def new_context(
    new_context: Callable[..., BrowserContext], csp_refusals: list[str]
) -> Iterator[Callable[..., BrowserContext]]:
    """pytest-playwright's ``new_context``, with every context reporting CSP refusals."""
    made: list[BrowserContext] = []

    def watched(**kwargs) -> BrowserContext:
        context = new_context(**kwargs)
        context.expose_binding(
            "cspRefused", lambda _source, seen: csp_refusals.append(f"event: {seen}")
        )
        context.add_init_script(CSP_LISTENER)
        context.on(
            "console",
            lambda message: (
                csp_refusals.append(f"console {message.type}: {message.text.split('. ')[0]}")
                if "Content Security Policy" in message.text
                else None
            ),
        )
        made.append(context)
        return context

    yield watched
    # A round trip to each page still open delivers the refusals it reported before.
    for context in made:
        for page in context.pages:
            if not page.is_closed():
                page.evaluate("() => true")


@pytest.fixture
def context(new_context: Callable[..., BrowserContext]) -> BrowserContext:
    """A desktop-sized context; ``new_context(**PHONE)`` (or other options) for the rest."""
    return new_context(**DESKTOP)


@pytest.fixture(scope="package", autouse=True)
def async_unsafe_allowed() -> Iterator[None]:
    """Let the tests use the database while Playwright runs.

    Playwright's sync API keeps an event loop running in the test's thread, and Django refuses
    synchronous database calls there unless ``DJANGO_ALLOW_ASYNC_UNSAFE`` is set. It is set for
    this package only, not at import: set for the whole process, it would reach the
    ``manage.py`` processes other tests start, and ``check --deploy`` warns about it.
    """
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        yield


@pytest.fixture(scope="package", autouse=True)
def migrated_contents_restored(migrated_contents, playwright, async_unsafe_allowed) -> None:
    """Let ``serialized_rollback`` find what to restore after each test's flush.

    Playwright's sync API keeps an event loop running in the test's thread, and Django then
    hands out database connections of that async context: new connection objects, without the
    contents pytest-django saved on the old ones. Without them every test after the first
    would find the tables the migrations fill (the wake texts) empty.
    """
    for alias in connections:
        # An alias pytest-django saved nothing for shares its database with one it did (all
        # four stores in one PostgreSQL database): nothing of its own to restore, and no
        # post-migrate step after its flush either, which would recreate content types that
        # the restore then brings back a second time.
        connections[alias]._test_serialized_contents = migrated_contents.get(alias, "[]")


@pytest.fixture(scope="package", autouse=True)
def event_log_triggers_held_off(
    django_db_setup, django_db_blocker, playwright, async_unsafe_allowed
) -> Iterator[None]:
    """The event log's append-only triggers lifted while this package's tests run: the live
    server needs committed data, so they are transactional (``event_log_triggers_lifted``)."""
    with event_log_triggers_lifted(django_db_blocker):
        yield


@pytest.fixture(scope="session", autouse=True)
def slow_imports_done() -> None:
    """Import the anthropic SDK (1.5 s) and dateparser once, up front, as a long-running worker
    would have: otherwise the first turn of the session pays for them while being watched."""
    import anthropic  # noqa: F401
    import dateparser.search  # noqa: F401


@pytest.fixture(autouse=True)
def isolated(settings, tmp_path) -> None:
    """Uploads in a folder of the test's own, a cache of its own (sign-in failures, the
    cluster status), the companion offline unless the test asks for ``fake_api``."""
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": f"browser-{tmp_path.name}",
        }
    }
    settings.ANTHROPIC_API_KEY = ""
    settings.COMPANION_OFFLINE = True


@pytest.fixture
def worker(monkeypatch) -> Iterator[list[threading.Thread]]:
    """Answer queued turns in a background thread, as the django-q2 worker would.

    The chat page queues a turn with django-q2's ``async_task``; in tests the queue runs
    tasks synchronously (``tests/conftest.py``), inside the request, so nothing could be seen
    streaming. Here each queued turn starts a thread that runs ``run_turns_task`` on its own
    database connections and closes them when done. The real cluster answering a queued turn
    is covered by ``tests/heart/test_worker.py``.
    """
    threads: list[threading.Thread] = []

    def answer(turn_id: int) -> None:
        try:
            run_turns_task(turn_id)
        finally:
            connections.close_all()

    def enqueue(func: str, *args, **kwargs) -> str:
        assert func == "heart.tasks.run_turns_task", func
        thread = threading.Thread(target=answer, args=args, daemon=True, name=f"turn-{args[0]}")
        threads.append(thread)
        thread.start()
        return thread.name

    monkeypatch.setattr(services, "async_task", enqueue)
    yield threads
    for thread in threads:
        thread.join(timeout=WORKER_JOIN_SECONDS)
    assert not any(thread.is_alive() for thread in threads), "a turn was still being answered"


@pytest.fixture
def owner(django_user_model):
    return django_user_model.objects.create_superuser(username="owner", password=PASSWORD)


def log_in(page: Page, *, username: str = "owner", password: str = PASSWORD) -> None:
    """Sign in through the real form, as a person would."""
    page.goto("/accounts/login/")
    page.get_by_label("Name").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()


@pytest.fixture
def signed_in(owner, live_server) -> Callable[[BrowserContext], BrowserContext]:
    """Give a context the owner's session, as signing in leaves it, without the form (which
    ``test_chat``'s signing-in tests go through): half a second less for each test."""
    client = Client()
    client.force_login(owner, backend="django.contrib.auth.backends.ModelBackend")
    cookie = {
        "name": settings.SESSION_COOKIE_NAME,
        "value": client.cookies[settings.SESSION_COOKIE_NAME].value,
        "url": live_server.url,
    }

    def sign(context: BrowserContext) -> BrowserContext:
        context.add_cookies([cookie])
        return context

    return sign


def chat_open(page: Page) -> Page:
    """Wait until the chat page (signed in) is shown and its script is running."""
    expect(page.locator("#composer")).to_be_visible()
    page.wait_for_function("() => !!(window.silentstar && window.silentstar.send)")
    return page


def chat_page(context: BrowserContext) -> Page:
    """The chat page in a new page of a signed-in context, its script running."""
    page = context.new_page()
    page.goto("/")
    return chat_open(page)


@pytest.fixture
def page(context: BrowserContext, signed_in) -> Page:
    """The chat page on a desktop-sized screen, signed in as the owner."""
    return chat_page(signed_in(context))


@pytest.fixture
def phone_page(new_context: Callable[..., BrowserContext], signed_in) -> Page:
    """The chat page on a phone-sized touch screen, signed in as the owner."""
    return chat_page(signed_in(new_context(**PHONE)))


@pytest.fixture
def screenshot(request) -> Callable[[Page, str], Path]:
    """Save a screenshot as ``test-artifacts/screenshots/<test>-<desktop|phone>.png``."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    test = request.node.originalname

    def save(page: Page, size: str) -> Path:
        path = SCREENSHOTS / f"{test}-{size}.png"
        page.screenshot(path=path, animations="disabled", caret="hide")
        return path

    return save


def page_settled(page: Page, url: str) -> Response:
    """Open ``url`` and wait until every request the page made has finished, those its scripts
    made while it loaded included: what it shows is then all there. Playwright's "networkidle"
    waits for the same and then half a second more on every page."""
    pending: set[Request] = set()

    def started(request: Request) -> None:
        pending.add(request)

    def ended(request: Request) -> None:
        pending.discard(request)

    page.on("request", started)
    page.on("requestfinished", ended)
    page.on("requestfailed", ended)
    try:
        response = page.goto(url)
        deadline = time.monotonic() + PAGE_SETTLE_SECONDS
        while pending:
            assert time.monotonic() < deadline, f"{url} still loads {[r.url for r in pending]}"
            page.wait_for_timeout(20)
    finally:
        page.remove_listener("request", started)
        page.remove_listener("requestfinished", ended)
        page.remove_listener("requestfailed", ended)
    return response


# The rules of WCAG 2.1 A and AA; axe's "best-practice" rules are left out.
AXE_OPTIONS = {
    "runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]},
    "resultTypes": ["violations"],
}


def accessibility_problems(page: Page) -> list[str]:
    """axe-core's serious and critical WCAG 2.1 AA violations on the page, one line each (the
    rule, what it asks and where); empty when there are none. axe-playwright-python puts axe
    into the page through the browser's own protocol, so the page's Content-Security-Policy
    does not refuse it."""
    return [
        f"{found['id']} ({found['impact']}): {found['help']} — "
        + ", ".join(" ".join(map(str, node["target"])) for node in found["nodes"])
        for found in Axe().run(page, options=AXE_OPTIONS).response["violations"]
        if found["impact"] in ("serious", "critical")
    ]
