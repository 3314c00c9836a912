"""Web Push: a notification on each device that opted in when the companion writes first.

A device subscribes from the notifications page (``notifications.js``): its browser's push
service gives it an address (the endpoint) and two keys, which ``subscription_save`` keeps, one
row per device. ``push_notify`` queues one delivery per device, and ``push_send`` sends it:
encrypted to the device's keys (RFC 8291, by pywebpush) and signed with the installation's VAPID
key (RFC 8292), so the push service carries a blob it cannot read. A device whose endpoint is
gone (404, 410) is removed; any other failure is tried again later, a bounded number of times;
a delivery is sent at most once.

The VAPID key is generated on first use into ``DATA_DIR/push_key.pem``, readable by its owner
alone, as the secret key is (``silentstar/secret_key.py``): backups carry it and a restore puts
it back (``transfer/backup.py``), so the devices' subscriptions, which name its public half,
go on working. No export holds it, nor the subscriptions. docs/nudges.md says what is sent.
"""

import json
import logging
from datetime import timedelta

from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from django.conf import settings
from django.db.models import F
from django.utils import timezone
from django_q.models import Schedule
from django_q.tasks import async_task, schedule
from py_vapid import Vapid, b64urlencode

from heart.models import PushDelivery, PushStatus, PushSubscription
from silentstar.secret_key import secret_key_write
from silentstar.words import cut_words

logger = logging.getLogger(__name__)

PUSH_KEY_FILE = "push_key.pem"
DEVICE_MAX = PushSubscription._meta.get_field("device").max_length
WORDS_MAX = 120  # the first words a notification may show: what a lock screen has room for
RETRY_SECONDS = 60  # the wait before the first retry; each next one waits twice as long
SEND_TIMEOUT = 10  # seconds for the push service to take a notification
GONE = {404, 410}  # the push service's word for an endpoint that no longer takes pushes


def push_key() -> Vapid:
    """The installation's VAPID key, generated and kept in the data folder first if it has none
    (two processes doing so together keep one, the first written: ``secret_key_write``)."""
    path = settings.DATA_DIR / PUSH_KEY_FILE
    if not path.exists():
        made = Vapid()
        made.generate_keys()
        settings.DATA_DIR.mkdir(parents=True, exist_ok=True)
        secret_key_write(path, made.private_pem().decode().strip())
    return Vapid.from_pem(path.read_bytes())


def push_public_key() -> str:
    """The public half of the VAPID key, as a page gives it to ``pushManager.subscribe`` (the
    ``applicationServerKey``): the uncompressed point, base64url without padding."""
    point = push_key().public_key.public_bytes(Encoding.X962, PublicFormat.UncompressedPoint)
    return b64urlencode(point)


def subscription_save(
    *, endpoint: str, p256dh: str, auth: str, device: str, show_words: bool
) -> PushSubscription:
    """Keep a device's subscription; the same endpoint again (the device subscribing anew, or
    changing its choice of words) updates its row."""
    subscription, _ = PushSubscription.objects.update_or_create(
        endpoint=endpoint,
        defaults={
            "p256dh": p256dh,
            "auth": auth,
            "device": device[:DEVICE_MAX],
            "show_words": show_words,
            "failures": 0,
        },
    )
    return subscription


def subscription_remove(*, endpoint: str) -> bool:
    """Forget a device: nothing more is sent to it. Whether it was kept."""
    removed, _ = PushSubscription.objects.filter(endpoint=endpoint).delete()
    return bool(removed)


def push_notify(*, ref: str, who: str, first_words: str, url: str) -> int:
    """Queue the notification ``ref`` ("nudge:12") once to every device kept; how many were
    queued. It says who wrote, and her first words only to the devices that chose them; a
    device that had it already is not queued again."""
    queued = 0
    for subscription in PushSubscription.objects.order_by("pk"):
        payload = {
            "title": who,
            "body": cut_words(first_words, WORDS_MAX) if subscription.show_words else "",
            "url": url,
            "tag": ref,
        }
        delivery, created = PushDelivery.objects.get_or_create(
            subscription=subscription, ref=ref, defaults={"payload": payload}
        )
        if created:
            async_task("heart.tasks.push_send_task", delivery.pk, group="push")
            queued += 1
    return queued


def push_send(*, delivery_id: int) -> str:
    """Send one delivery if it is still queued, and say how it went (its status after).

    It is claimed first, so a delivery is never sent twice: a delivery sent, failed, gone, or
    being sent by another worker, is left as it is.
    """
    claimed = PushDelivery.objects.filter(pk=delivery_id, status=PushStatus.QUEUED).update(
        status=PushStatus.SENDING, attempts=F("attempts") + 1
    )
    delivery = PushDelivery.objects.select_related("subscription").get(pk=delivery_id)
    if not claimed:
        return delivery.status
    subscription = delivery.subscription
    if subscription is None:
        return _delivery_end(delivery, PushStatus.GONE, error="the device was removed")
    # pywebpush brings requests and aiohttp: imported here, in the worker that sends, rather
    # than at every start of the web.
    from pywebpush import WebPushException, webpush

    try:
        webpush(
            subscription_info={
                "endpoint": subscription.endpoint,
                "keys": {"p256dh": subscription.p256dh, "auth": subscription.auth},
            },
            data=json.dumps(delivery.payload),
            vapid_private_key=push_key(),
            vapid_claims={"sub": settings.PUSH_CONTACT},
            ttl=settings.PUSH_TTL_HOURS * 3600,
            timeout=SEND_TIMEOUT,
        )
    except WebPushException as failure:
        status = failure.response.status_code if failure.response is not None else None
        if status in GONE:
            subscription_remove(endpoint=subscription.endpoint)
            return _delivery_end(delivery, PushStatus.GONE, error=f"{status}: gone")
        return _delivery_failed(delivery, error=str(failure).splitlines()[0])
    except (OSError, ValueError) as failure:  # the network, or keys the device gave wrong
        return _delivery_failed(delivery, error=f"{type(failure).__name__}: {failure}")
    now = timezone.now()
    PushSubscription.objects.filter(pk=subscription.pk).update(last_sent_at=now, failures=0)
    return _delivery_end(delivery, PushStatus.SENT, sent_at=now)


def _delivery_failed(delivery: PushDelivery, *, error: str) -> str:
    """Queue ``delivery`` again later, waiting twice as long each time, until it has been tried
    ``PUSH_ATTEMPTS`` times; then it failed."""
    logger.warning("Push %s to device %s failed: %s", delivery.ref, delivery.subscription_id, error)
    if delivery.attempts >= settings.PUSH_ATTEMPTS:
        PushSubscription.objects.filter(pk=delivery.subscription_id).update(
            failures=F("failures") + 1
        )
        return _delivery_end(delivery, PushStatus.FAILED, error=error)
    _delivery_end(delivery, PushStatus.QUEUED, error=error)
    schedule(
        "heart.tasks.push_send_task",
        delivery.pk,
        name=f"heart: push {delivery.ref} to device {delivery.subscription_id}, "
        f"attempt {delivery.attempts + 1}",
        schedule_type=Schedule.ONCE,
        next_run=timezone.now() + push_retry_wait(attempts=delivery.attempts),
    )
    return PushStatus.QUEUED


def push_retry_wait(*, attempts: int) -> timedelta:
    """How long a delivery tried ``attempts`` times waits before it is tried again."""
    return timedelta(seconds=RETRY_SECONDS * 2 ** (attempts - 1))


def _delivery_end(delivery: PushDelivery, status: str, *, error: str = "", sent_at=None) -> str:
    PushDelivery.objects.filter(pk=delivery.pk).update(status=status, error=error, sent_at=sent_at)
    return status
