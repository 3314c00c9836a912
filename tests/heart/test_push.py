"""Web Push to a local push service: what a device receives, decrypted with its own keys, and
what the push service is told when it answers otherwise."""

import base64
import json
import os
import stat
import threading
from dataclasses import dataclass, field
from datetime import timedelta
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import http_ece
import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, utils
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from django.utils import timezone
from django_q.models import Schedule
from django_q.scheduler import scheduler

from heart import push
from heart.models import PushDelivery, PushStatus, PushSubscription
from heart.push import (
    PUSH_KEY_FILE,
    push_notify,
    push_public_key,
    push_retry_wait,
    subscription_remove,
    subscription_save,
)
from heart.tasks import push_send_task
from transfer.portable import portable_export

pytestmark = pytest.mark.django_db(databases="__all__")

WORDS = "I found the well again, the one by the lighthouse, and it still echoes."


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass
class Received:
    path: str
    headers: Message  # read without regard to case, as HTTP's are
    body: bytes


@dataclass
class PushService:
    """A push service on this machine: it answers each POST with the next status given
    (201 once they run out) and keeps what it received."""

    url: str = ""
    statuses: list[int] = field(default_factory=list)
    received: list[Received] = field(default_factory=list)


@pytest.fixture
def push_service(monkeypatch):
    service = PushService()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            service.received.append(Received(self.path, self.headers, body))
            status = service.statuses.pop(0) if service.statuses else 201
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    no_proxy = ",".join(filter(None, [os.environ.get("NO_PROXY"), "127.0.0.1", "localhost"]))
    monkeypatch.setenv("NO_PROXY", no_proxy)
    service.url = f"http://127.0.0.1:{server.server_port}"
    yield service
    server.shutdown()
    server.server_close()


@dataclass
class Device:
    """A browser's side of a subscription: its key pair and auth secret, as a browser makes
    them, and the endpoint its push service gave it."""

    endpoint: str
    private_key: ec.EllipticCurvePrivateKey
    auth_secret: bytes

    @property
    def p256dh(self) -> str:
        point = self.private_key.public_key().public_bytes(
            Encoding.X962, PublicFormat.UncompressedPoint
        )
        return b64url(point)

    def subscribe(self, *, show_words: bool) -> PushSubscription:
        return subscription_save(
            endpoint=self.endpoint,
            p256dh=self.p256dh,
            auth=b64url(self.auth_secret),
            device="Mozilla/5.0 (Linux; Android 15) Mobile",
            show_words=show_words,
        )

    def read(self, received: Received) -> dict:
        """The notification in a push, decrypted as the browser would."""
        plain = http_ece.decrypt(
            received.body,
            private_key=self.private_key,
            auth_secret=self.auth_secret,
            version="aes128gcm",
        )
        return json.loads(plain)


@pytest.fixture
def device(push_service):
    return Device(
        endpoint=f"{push_service.url}/push/phone",
        private_key=ec.generate_private_key(ec.SECP256R1()),
        auth_secret=os.urandom(16),
    )


@pytest.fixture
def clock(monkeypatch):
    """The project's clock, moved by the test: ``clock[0] += timedelta(…)``."""
    moment = [timezone.now()]
    monkeypatch.setattr(timezone, "now", lambda: moment[0])
    return moment


def test_it_sends_who_wrote_and_her_first_words_encrypted_to_the_device(push_service, device):
    subscription = device.subscribe(show_words=True)

    queued = push_notify(ref="nudge:12", who="Luna", first_words=WORDS, url="/#event-12")

    assert queued == 1
    [received] = push_service.received
    assert received.path == "/push/phone"
    assert received.headers["Content-Encoding"] == "aes128gcm"
    assert received.headers["TTL"] == str(24 * 3600)
    assert WORDS.encode() not in received.body
    assert device.read(received) == {
        "title": "Luna",
        "body": "I found the well again, the one by the lighthouse, and it still echoes.",
        "url": "/#event-12",
        "tag": "nudge:12",
    }
    delivery = PushDelivery.objects.get()
    assert (delivery.subscription, delivery.status, delivery.attempts) == (subscription, "sent", 1)
    assert delivery.sent_at is not None
    subscription.refresh_from_db()
    assert subscription.last_sent_at == delivery.sent_at


def test_without_the_words_chosen_it_says_only_who_wrote(push_service, device):
    device.subscribe(show_words=False)

    push_notify(ref="nudge:12", who="Luna", first_words=WORDS, url="/#event-12")

    [received] = push_service.received
    assert device.read(received) == {
        "title": "Luna",
        "body": "",
        "url": "/#event-12",
        "tag": "nudge:12",
    }


def test_long_first_words_are_cut_at_a_word(push_service, device):
    device.subscribe(show_words=True)

    long = " ".join([WORDS] * 3)
    push_notify(ref="nudge:3", who="Luna", first_words=long, url="/#event-3")

    body = device.read(push_service.received[0])["body"]
    assert len(body) <= push.WORDS_MAX and body.endswith("…")
    assert long.startswith(body[:-1]) and long[len(body) - 1] in " ,"


def test_its_vapid_signature_verifies_against_the_public_key_the_page_is_given(
    push_service, device, settings
):
    device.subscribe(show_words=False)

    push_notify(ref="nudge:12", who="Luna", first_words=WORDS, url="/#event-12")

    scheme, _, fields = push_service.received[0].headers["Authorization"].partition(" ")
    given = dict(part.strip().split("=", 1) for part in fields.split(","))
    assert scheme == "vapid" and given["k"] == push_public_key()
    header, claims, signature = given["t"].split(".")
    public_key = ec.EllipticCurvePublicKey.from_encoded_point(
        ec.SECP256R1(), unb64url(push_public_key())
    )
    raw = unb64url(signature)
    public_key.verify(
        utils.encode_dss_signature(int.from_bytes(raw[:32]), int.from_bytes(raw[32:])),
        f"{header}.{claims}".encode(),
        ec.ECDSA(hashes.SHA256()),
    )
    said = json.loads(unb64url(claims))
    assert said["aud"] == push_service.url
    assert said["sub"] == settings.PUSH_CONTACT == "mailto:nobody@silentstar.invalid"
    assert said["exp"] > timezone.now().timestamp()


def test_the_key_is_made_once_into_the_data_folder_readable_by_its_owner_alone(settings):
    first = push_public_key()

    assert push_public_key() == first
    path = settings.DATA_DIR / PUSH_KEY_FILE
    assert path.read_text().startswith("-----BEGIN PRIVATE KEY-----")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(unb64url(first)) == 65 and unb64url(first)[0] == 4  # an uncompressed P-256 point


@pytest.mark.parametrize("status", [404, 410])
def test_an_endpoint_gone_removes_the_subscription(push_service, device, status):
    device.subscribe(show_words=False)
    push_service.statuses = [status]

    push_notify(ref="nudge:12", who="Luna", first_words=WORDS, url="/#event-12")

    assert PushSubscription.objects.count() == 0
    delivery = PushDelivery.objects.get()
    assert (delivery.subscription, delivery.status) == (None, PushStatus.GONE)
    assert delivery.error == f"{status}: gone"
    assert not Schedule.objects.exists()


def test_a_failure_is_tried_again_later_up_to_the_limit_then_marked_failed(
    push_service, device, clock, settings
):
    settings.PUSH_ATTEMPTS = 3
    subscription = device.subscribe(show_words=False)
    push_service.statuses = [500, 503, 500]

    push_notify(ref="nudge:12", who="Luna", first_words=WORDS, url="/#event-12")

    delivery = PushDelivery.objects.get()
    for attempts in (1, 2):
        delivery.refresh_from_db()
        assert (delivery.status, delivery.attempts) == (PushStatus.QUEUED, attempts)
        assert "Push failed: 50" in delivery.error
        retry = Schedule.objects.get()
        assert retry.func == "heart.tasks.push_send_task" and retry.args == f"({delivery.pk},)"
        assert retry.next_run == clock[0] + push_retry_wait(attempts=attempts)
        clock[0] += push_retry_wait(attempts=attempts) - timedelta(seconds=1)
        scheduler()
        assert len(push_service.received) == attempts  # not yet
        clock[0] += timedelta(seconds=2)
        scheduler()
        assert len(push_service.received) == attempts + 1

    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == (PushStatus.FAILED, 3)
    assert not Schedule.objects.exists()
    subscription.refresh_from_db()
    assert subscription.failures == 1
    assert push_retry_wait(attempts=1) < push_retry_wait(attempts=2)


def test_a_retry_that_then_succeeds_is_sent_once(push_service, device, clock):
    device.subscribe(show_words=False)
    push_service.statuses = [500]

    push_notify(ref="nudge:12", who="Luna", first_words=WORDS, url="/#event-12")
    clock[0] += push_retry_wait(attempts=1) + timedelta(seconds=1)
    scheduler()

    delivery = PushDelivery.objects.get()
    assert (delivery.status, delivery.attempts, delivery.error) == (PushStatus.SENT, 2, "")
    assert len(push_service.received) == 2


def test_nothing_is_sent_twice(push_service, device):
    device.subscribe(show_words=True)
    assert push_notify(ref="nudge:12", who="Luna", first_words=WORDS, url="/#event-12") == 1

    again = push_notify(ref="nudge:12", who="Luna", first_words=WORDS, url="/#event-12")
    delivery = PushDelivery.objects.get()
    resent = push_send_task(delivery.pk)

    assert (again, resent) == (0, PushStatus.SENT)
    assert len(push_service.received) == 1
    assert PushDelivery.objects.get().attempts == 1


def test_each_device_gets_its_own_notification(push_service, device):
    device.subscribe(show_words=True)
    other = Device(
        endpoint=f"{push_service.url}/push/laptop",
        private_key=ec.generate_private_key(ec.SECP256R1()),
        auth_secret=os.urandom(16),
    )
    other.subscribe(show_words=False)

    assert push_notify(ref="nudge:4", who="Luna", first_words=WORDS, url="/#event-4") == 2

    by_path = {received.path: received for received in push_service.received}
    assert device.read(by_path["/push/phone"])["body"] == WORDS
    assert other.read(by_path["/push/laptop"])["body"] == ""


def test_subscribing_again_from_a_device_updates_its_one_row(device):
    device.subscribe(show_words=False)
    again = device.subscribe(show_words=True)

    assert list(PushSubscription.objects.all()) == [again]
    assert again.show_words is True
    assert subscription_remove(endpoint=device.endpoint) is True
    assert not PushSubscription.objects.exists()
    assert subscription_remove(endpoint=device.endpoint) is False


def test_a_delivery_to_a_device_removed_meanwhile_is_not_sent(push_service, device, clock):
    device.subscribe(show_words=False)
    push_service.statuses = [500]
    push_notify(ref="nudge:12", who="Luna", first_words=WORDS, url="/#event-12")

    subscription_remove(endpoint=device.endpoint)
    clock[0] += push_retry_wait(attempts=1) + timedelta(seconds=1)
    scheduler()

    assert len(push_service.received) == 1
    assert PushDelivery.objects.get().status == PushStatus.GONE


@pytest.mark.parametrize("for_sharing", [False, True], ids=["export", "for-sharing"])
def test_no_export_holds_the_key_or_the_devices(device, settings, tmp_path, for_sharing):
    device.subscribe(show_words=True)
    push_public_key()
    key = (settings.DATA_DIR / PUSH_KEY_FILE).read_text().splitlines()[1]
    folder = tmp_path / "export"

    portable_export(folder=folder, progress=lambda line: None, for_sharing=for_sharing)

    written = {path.name: path.read_bytes() for path in folder.rglob("*") if path.is_file()}
    assert "events.jsonl" in written and PUSH_KEY_FILE not in written
    held = [
        name
        for name, content in written.items()
        for secret in (key, device.endpoint, device.p256dh)
        if secret.encode() in content
    ]
    assert held == []
