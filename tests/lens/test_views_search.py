"""The search page and the JSON query endpoint, for the signed-in owner only."""

import pytest
from django.urls import reverse

from gem.models import Fragment, WorkingMemory

pytestmark = pytest.mark.django_db(databases="__all__")


def test_it_shows_hits_with_marked_words(admin_client):
    Fragment.objects.create(key="fairy", ambient="A grey crewneck & more.")
    response = admin_client.get(reverse("lens-search-page"), {"q": "crewneck"})
    assert response.status_code == 200
    html = response.content.decode()
    assert "fragment:fairy" in html
    assert "grey <mark>crewneck</mark> &amp; more" in html  # escaped, then marked


def test_it_answers_htmx_with_the_results_partial(admin_client):
    WorkingMemory.objects.create(type="thought", content="tune the piano")
    response = admin_client.get(
        reverse("lens-search-page"), {"q": "piano", "kind": "wm"}, headers={"HX-Request": "true"}
    )
    html = response.content.decode()
    assert response.status_code == 200 and html.startswith('<section id="results"')
    assert "<mark>piano</mark>" in html and "<html" not in html


def test_it_says_what_is_wrong_with_a_query(admin_client):
    response = admin_client.get(reverse("lens-search-page"), {"q": "?!"})
    assert response.status_code == 400 and "no words" in response.content.decode()


def test_the_search_page_needs_a_sign_in(client):
    response = client.get(reverse("lens-search-page"), {"q": "x"})
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_the_query_endpoint_answers_json(admin_client):
    item = WorkingMemory.objects.create(type="feeling", content="glad", valence=0.6)
    response = admin_client.get(reverse("lens-query-json"), {"emotion": "positive"})
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 1 and body["results"][0]["ref"] == f"wm:{item.pk}"
    assert body["results"][0]["emotional_valence"] == 0.6


def test_the_query_endpoint_names_a_bad_parameter(admin_client):
    response = admin_client.get(reverse("lens-query-json"), {"limit": "500"})
    assert response.status_code == 400
    assert response.json() == {"error": "limit: must be from 1 to 100, not 500"}


def test_the_query_endpoint_refuses_a_signed_out_client(client):
    WorkingMemory.objects.create(type="thought", content="private")
    response = client.get(reverse("lens-query-json"))
    assert response.status_code == 302 and "private" not in response.content.decode()


@pytest.mark.parametrize("name", ["lens-search-page", "lens-query-json"])
def test_it_refuses_a_post(admin_client, name):
    assert admin_client.post(reverse(name)).status_code == 405
