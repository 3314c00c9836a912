"""Notifications in a real browser: the opt-in page at phone and desktop sizes, a push delivered
to the service worker, and a tap on the notification opening the chat at her message.

The browser's push service cannot be reached from here, so the subscription itself is stubbed in
the page (``PushManager.prototype.subscribe`` gives a subscription with a real key pair's public
key); everything after it (the page's script, its post, the view, the list) is real. A push is
delivered to the real service worker (``/sw.js``) through Chromium's DevTools protocol
(``ServiceWorker.deliverPushMessage``), so sw.js's own ``push`` handler reads it.

What Debian's chromium-headless-shell cannot do, and so is stood in for in the worker:
- show a notification: its ``Notification.permission`` stays "denied" whatever is granted
  (``context.grant_permissions`` and the protocol's ``Browser.setPermission`` both leave it so),
  and ``showNotification`` rejects. The worker's ``showNotification`` is replaced by a recorder,
  which the test reads: the title, body, tag, icon and data sw.js asked for.
- click a notification: the protocol has no command for it, a script-made event cannot
  ``waitUntil``, and a window may be opened or focused only in a real click. The click is a
  script-made event carrying the notification's data and taking ``waitUntil``; ``focus`` answers
  the window itself and ``openWindow`` is recorded. The navigation of an open chat to her message
  is the browser's own.
"""

import base64
import json
import os
from collections.abc import Callable

import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from playwright.sync_api import BrowserContext, Page, expect

from heart.models import PushSubscription
from heart.push import push_public_key
from tests.browser.conftest import (
    BROWSER_DB,
    DESKTOP,
    PHONE,
    accessibility_problems,
    chat_page,
)

pytestmark = BROWSER_DB

ENDPOINT = "https://push.example.invalid/send/this-device"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def subscription_stub() -> str:
    """A script that gives the page a subscription of its own instead of the push service's:
    an endpoint, a real P-256 public key and an auth secret, as a browser's would be. What the
    page subscribed with is kept in ``window.subscribedWith``. The permission, which this
    browser denies whatever is granted, is asked for and given as a person would."""
    point = (
        ec.generate_private_key(ec.SECP256R1())
        .public_key()
        .public_bytes(Encoding.X962, PublicFormat.UncompressedPoint)
    )
    keys = {"p256dh": b64url(point), "auth": b64url(os.urandom(16))}
    return f"""
if (window.Notification) {{
  let permission = "default";
  Object.defineProperty(Notification, "permission", {{ get: () => permission }});
  Notification.requestPermission = async () => {{
    window.permissionAsked = true;
    permission = "granted";
    return permission;
  }};
}}
if (window.PushManager) {{
  PushManager.prototype.getSubscription = async () => null;
  PushManager.prototype.subscribe = async function (options) {{
    window.subscribedWith = {{
      userVisibleOnly: options.userVisibleOnly,
      key: Array.from(new Uint8Array(options.applicationServerKey)),
    }};
    return {{
      endpoint: {json.dumps(ENDPOINT)},
      options,
      toJSON() {{ return {{ endpoint: this.endpoint, keys: {json.dumps(keys)} }}; }},
      unsubscribe: async () => true,
    }};
  }};
}}
"""


@pytest.fixture
def notifying(new_context, signed_in) -> Callable[..., BrowserContext]:
    """A signed-in context, its notification permission and push subscriptions stubbed."""

    def made(**options) -> BrowserContext:
        context = signed_in(new_context(**options))
        context.add_init_script(subscription_stub())
        return context

    return made


def touch_targets_too_small(page: Page) -> list[str]:
    return page.evaluate(
        """() => [...document.querySelectorAll('main button, main label.push-words')]
          .filter((e) => e.offsetParent !== null)
          .map((e) => [e.textContent.trim(), e.getBoundingClientRect()])
          .filter(([, box]) => box.height < 44)
          .map(([name, box]) => `${name}: ${box.height}px`)"""
    )


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_the_page_says_what_is_sent_turns_notifications_on_and_removes_the_device(
    notifying, size, screenshot
):
    page = chat_page(notifying(**(PHONE if size == "phone" else DESKTOP)))
    if size == "phone":  # the other pages fold behind "menu" there
        page.locator(".chat-menu > summary").tap()
    link = page.locator(".chat-nav").get_by_role("link", name="notifications")
    assert link.bounding_box()["height"] >= 44
    assert page.evaluate("document.documentElement.scrollWidth") <= page.viewport_size["width"]
    screenshot(page, f"chat-{size}")
    link.click()

    expect(page.get_by_role("heading", name="Notifications", exact=True)).to_be_visible()
    expect(page.locator("#push-state")).to_have_text(
        "Notifications are off for this device. Your browser will ask whether to allow them."
    )
    told = page.locator(".told")
    expect(told).to_contain_text("sees its size, when it was sent and to which device")
    expect(told).to_contain_text("the first words of her message, only if you chose them")
    expect(page.locator("#devices")).to_contain_text("No device has notifications on.")
    assert page.evaluate("document.documentElement.scrollWidth") <= page.viewport_size["width"]
    assert touch_targets_too_small(page) == []
    assert accessibility_problems(page) == []

    page.get_by_label("Show the first words of her message").check()
    page.get_by_role("button", name="Turn on notifications on this device").click()

    expect(page.locator("#push-state")).to_have_text(
        "Notifications are on for this device, with the first words of her message."
    )
    agent = page.evaluate("navigator.userAgent")
    expect(page.locator(".device-name")).to_have_text(agent[:200])
    expect(page.locator(".device-meta")).to_contain_text("her first words shown")
    subscription = PushSubscription.objects.get()
    assert (subscription.endpoint, subscription.show_words) == (ENDPOINT, True)
    assert page.evaluate("window.permissionAsked") is True
    asked = page.evaluate("window.subscribedWith")
    assert asked["userVisibleOnly"] is True
    assert b64url(bytes(asked["key"])) == push_public_key()
    screenshot(page, size)
    assert page.evaluate("document.documentElement.scrollWidth") <= page.viewport_size["width"]
    assert touch_targets_too_small(page) == []
    assert accessibility_problems(page) == []

    page.get_by_role("button", name="Remove").click()

    expect(page.locator("#devices")).to_contain_text("No device has notifications on.")
    assert not PushSubscription.objects.exists()


def test_turned_on_again_without_words_the_device_is_updated_not_added(notifying):
    page = notifying(**PHONE).new_page()
    page.goto("/notifications/")
    turn_on = page.get_by_role("button", name="Turn on notifications on this device")
    words = page.get_by_label("Show the first words of her message")

    words.check()
    turn_on.click()
    expect(page.locator(".device-meta")).to_contain_text("her first words shown")
    words.uncheck()
    turn_on.click()

    expect(page.locator("#push-state")).to_have_text(
        "Notifications are on for this device: they say only who wrote."
    )
    expect(page.locator(".device")).to_have_count(1)
    expect(page.locator(".device-meta")).to_contain_text("only who wrote")
    assert PushSubscription.objects.get().show_words is False


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (
            "Object.defineProperty(window, 'isSecureContext', {value: false});",
            "This page is not in a secure context",
        ),
        ("delete window.PushManager;", "This browser cannot receive push notifications."),
    ],
    ids=["plain-http", "no-push"],
)
def test_it_says_plainly_when_this_browser_cannot_be_notified(new_context, signed_in, change, said):
    context = signed_in(new_context(**PHONE))
    context.add_init_script(change)
    page = context.new_page()
    page.goto("/notifications/")

    expect(page.locator("#push-state")).to_contain_text(said)
    expect(page.get_by_role("button", name="Turn on notifications on this device")).to_be_hidden()
    assert accessibility_problems(page) == []


def service_worker_of(page: Page, live_server):
    """The chat's service worker, running, and its registration's id in the DevTools protocol."""
    cdp = page.context.new_cdp_session(page)
    registrations: list[dict] = []
    cdp.on(
        "ServiceWorker.workerRegistrationUpdated",
        lambda e: registrations.extend(e["registrations"]),
    )
    cdp.send("ServiceWorker.enable")
    page.evaluate("navigator.serviceWorker.ready.then(() => true)")
    scope = f"{live_server.url}/"
    page.wait_for_function("() => !!navigator.serviceWorker.controller")
    found = [r for r in registrations if r["scopeURL"] == scope and not r["isDeleted"]]
    assert found, registrations
    [worker] = [w for w in page.context.service_workers if w.url == f"{live_server.url}/sw.js"]
    return worker, cdp, found[-1]["registrationId"]


SHOWN_RECORDED = """() => {
  self.shown = [];
  self.registration.showNotification = async (title, options) => {
    self.shown.push({title, ...options});
  };
}"""


def test_a_push_to_the_service_worker_shows_who_wrote(page: Page, live_server):
    worker, cdp, registration = service_worker_of(page, live_server)
    worker.evaluate(SHOWN_RECORDED)
    notification = {"title": "Luna", "body": "", "url": "/#event-12", "tag": "nudge:12"}

    cdp.send(
        "ServiceWorker.deliverPushMessage",
        {
            "origin": live_server.url,
            "registrationId": registration,
            "data": json.dumps(notification),
        },
    )

    page.wait_for_function("() => true")  # a round trip
    worker_shown = None
    for _ in range(100):
        worker_shown = worker.evaluate("self.shown")
        if worker_shown:
            break
        page.wait_for_timeout(50)
    assert worker_shown == [
        {
            "title": "Luna",
            "body": "A new message in silentstar.",
            "tag": "nudge:12",
            "icon": "/static/icons/icon-192.png",
            "badge": "/static/icons/icon-192.png",
            "data": {"url": "/#event-12"},
        }
    ]


CLICK = """async (url) => {
  self.opened = [];
  self.clients.openWindow = async (href) => { self.opened.push(href); return null; };
  WindowClient.prototype.focus = async function () { return this; };
  let closed = false;
  let done = Promise.resolve();
  const event = new ExtendableEvent("notificationclick");
  Object.defineProperties(event, {
    notification: { value: { data: { url }, close() { closed = true; } } },
    waitUntil: { value: (promise) => { done = promise; } },
  });
  self.dispatchEvent(event);
  await done;
  return { closed, opened: self.opened };
}"""


def test_a_tap_on_the_notification_brings_the_open_chat_to_her_message(page: Page, live_server):
    worker, _, _ = service_worker_of(page, live_server)

    tapped = worker.evaluate(CLICK, "/#event-12")

    assert tapped == {"closed": True, "opened": []}
    expect(page).to_have_url(f"{live_server.url}/#event-12")


def test_a_tap_with_no_chat_open_opens_it_at_her_message(new_context, signed_in, live_server):
    page = chat_page(signed_in(new_context(**PHONE)))
    worker, _, _ = service_worker_of(page, live_server)
    page.goto("/notifications/")  # the only window: not the chat

    tapped = worker.evaluate(CLICK, "/#event-12")
    elsewhere = worker.evaluate(CLICK, "https://example.invalid/#event-12")

    assert tapped == {"closed": True, "opened": [f"{live_server.url}/#event-12"]}
    assert elsewhere["opened"] == [f"{live_server.url}/"]
    expect(page).to_have_url(f"{live_server.url}/notifications/")
