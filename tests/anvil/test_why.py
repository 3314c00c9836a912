""" "Why didn't she know X?" in the Anvil (anvil/why.py): the form and a verdict per turn."""

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from tests.heart.test_inspect import START, answered

pytestmark = pytest.mark.django_db(databases="__all__")


def test_it_answers_for_each_of_the_last_turns_with_links_to_them(admin_client, fake_api):
    first = answered(fake_api, "<luna>I planted the marigolds</luna>", START)
    response = admin_client.get(reverse("admin:why"), {"asked": "marigolds", "turns": "5"})
    assert response.status_code == 200
    html = response.text
    assert "Why didn't she know the words “marigolds”?" in html
    assert "<strong>in the context</strong>" in html  # the message itself, in its own turn
    assert reverse("admin:inspector", args=[first.pk]) in html
    never = admin_client.get(reverse("admin:why"), {"asked": "#999"}).text
    assert "<strong>never stored</strong>" in never


def test_it_refuses_a_turn_count_out_of_range_and_asks_first(admin_client):
    page = admin_client.get(reverse("admin:why")).text
    assert 'name="asked"' in page and "Why didn't she know" in page
    wrong = admin_client.get(reverse("admin:why"), {"asked": "tea", "turns": "0"}).text
    assert 'class="errornote"' in wrong


def test_only_those_who_may_read_the_snapshots_may_ask(client):
    User.objects.create_user("guest", password="x", is_staff=True)
    client.login(username="guest", password="x")
    assert client.get(reverse("admin:why"), {"asked": "tea"}).status_code == 403
