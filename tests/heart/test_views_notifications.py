"""The notifications page, and the posts that keep and remove a device's subscription."""

import base64
import os

import pytest
from django.urls import reverse

from heart.models import PushSubscription
from heart.push import push_public_key

pytestmark = pytest.mark.django_db(databases="__all__")

PHONE = "Mozilla/5.0 (Linux; Android 15; Pixel 9) Mobile Safari/537.36"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def subscription(**changed) -> dict:
    return {
        "endpoint": "https://push.example.invalid/send/phone",
        "p256dh": b64url(b"\x04" + os.urandom(64)),
        "auth": b64url(os.urandom(16)),
        **changed,
    }


def test_it_shows_what_is_sent_the_key_and_the_devices(admin_client):
    PushSubscription.objects.create(
        endpoint="https://push.example.invalid/send/1", p256dh="B", auth="A", device=PHONE
    )

    page = admin_client.get(reverse("heart-notifications"))

    assert page.status_code == 200
    assert f'data-key="{push_public_key()}"' in page.text
    assert "never what it says" in page.text
    assert PHONE in page.text
    assert "https://push.example.invalid/send/1" not in page.text  # the device's secret


def test_it_sends_visitors_who_are_not_signed_in_to_sign_in(client):
    for name in ("heart-notifications", "heart-notifications-subscribe"):
        response = client.get(reverse(name))
        assert response.status_code == 302 and reverse("login") in response.url


def test_the_posts_answer_only_posts_and_the_page_only_gets(admin_client):
    assert admin_client.post(reverse("heart-notifications")).status_code == 405
    assert admin_client.get(reverse("heart-notifications-subscribe")).status_code == 405
    assert admin_client.get(reverse("heart-notifications-remove")).status_code == 405


def test_it_keeps_the_device_with_its_browsers_name_and_answers_the_list(admin_client):
    response = admin_client.post(
        reverse("heart-notifications-subscribe"),
        subscription(show_words="on"),
        headers={"User-Agent": PHONE * 5},
    )

    assert response.status_code == 200
    kept = PushSubscription.objects.get()
    assert kept.device == (PHONE * 5)[:200] and kept.show_words is True
    assert response.text.lstrip().startswith('<div id="devices"')
    assert "her first words shown" in response.text


@pytest.mark.parametrize(
    ("changed", "said"),
    [
        ({"endpoint": "http://push.example.invalid/send/phone"}, "begins with https://"),
        (
            {"endpoint": "https://192.168.1.1/admin"},
            "“192.168.1.1” is not a browser&#x27;s push service this installation sends to",
        ),
        (
            {"endpoint": "https://fcm.googleapis.com.evil.example/x"},
            "is not a browser&#x27;s push service",
        ),
        ({"p256dh": b64url(b"\x02" + os.urandom(64))}, "public key for push"),
        ({"auth": b64url(os.urandom(12))}, "auth secret for push"),
        ({"auth": "not base64 at all!"}, "auth secret for push"),
    ],
    ids=[
        "plain-http",
        "private-address",
        "lookalike-host",
        "not-a-point",
        "short-secret",
        "not-base64",
    ],
)
def test_it_refuses_a_subscription_that_is_not_one(admin_client, changed, said):
    response = admin_client.post(reverse("heart-notifications-subscribe"), subscription(**changed))

    assert response.status_code == 400
    assert said in response.text and 'role="alert"' in response.text
    assert not PushSubscription.objects.exists()


def test_it_removes_a_device_and_a_device_gone_already_is_no_error(admin_client):
    admin_client.post(reverse("heart-notifications-subscribe"), subscription())
    device = PushSubscription.objects.get()

    for _ in range(2):
        response = admin_client.post(reverse("heart-notifications-remove"), {"device": device.pk})
        assert response.status_code == 303
        assert response.url == reverse("heart-notifications")
    assert not PushSubscription.objects.exists()
