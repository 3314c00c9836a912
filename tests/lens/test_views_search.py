"""The search page and the JSON query endpoint, for the signed-in owner only."""

from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from gem.models import Fragment, WorkingMemory
from heart.ingest import event_record
from mirror.models import Summary

pytestmark = pytest.mark.django_db(databases="__all__")

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def test_it_shows_hits_with_marked_words(admin_client):
    Fragment.objects.create(key="fairy", ambient="A grey crewneck & more.")
    response = admin_client.get(reverse("lens-search-page"), {"q": "crewneck"})
    assert response.status_code == 200
    html = response.content.decode()
    assert "fragment:fairy" in html
    assert "grey <mark>crewneck</mark> &amp; more" in html  # escaped, then marked


def test_it_searches_the_kinds_it_searched_before_and_offers_no_summaries(admin_client):
    Fragment.objects.create(key="fairy", ambient="A grey crewneck.")
    summary = Summary.objects.create(
        level="L0", first_event_id=1, last_event_id=3, content="They knitted a crewneck."
    )
    url = reverse("lens-search-page")
    for asked in ({"q": "crewneck"}, {"q": "crewneck", "kind": "summary"}):
        html = admin_client.get(url, asked).content.decode()
        assert "fragment:fairy" in html and f"summary:{summary.pk}" not in html
        assert 'value="summary"' not in html


def test_it_answers_htmx_with_the_results_partial(admin_client):
    WorkingMemory.objects.create(type="thought", content="tune the piano")
    response = admin_client.get(
        reverse("lens-search-page"), {"q": "piano", "kind": "wm"}, headers={"HX-Request": "true"}
    )
    html = response.content.decode()
    assert response.status_code == 200 and html.startswith('<section id="results"')
    assert "<mark>piano</mark>" in html and "<html" not in html


def test_it_pages_the_hits_and_keeps_the_query_in_the_page_links(admin_client):
    for n in range(23):
        event_record(text=f"walk number {n}", actor="luna", ts=START + timedelta(hours=n))
    url = reverse("lens-search-page")
    first = admin_client.get(url, {"q": "walk", "kind": "event"}).content.decode()
    assert first.count('<li class="hit event">') == 10 and "1–10 of 23 hits" in first
    assert (
        'href="?q=walk&amp;kind=event&amp;page=2" rel="next"' in first and 'rel="prev"' not in first
    )
    last = admin_client.get(url, {"q": "walk", "kind": "event", "page": 3}).content.decode()
    assert last.count('<li class="hit event">') == 3 and '<ol class="hits" start="21">' in last
    assert 'rel="prev"' in last and 'rel="next"' not in last


def test_it_leaves_out_turns_beside_a_match_and_shows_display_text(admin_client):
    asked = event_record(text="<luna>how was the physio?</luna>", actor="luna", ts=START)[0]
    answer = event_record(
        text="<say>Sore but fine.</say> recall(knee)", actor="claude", ts=START + timedelta(hours=1)
    )[0]
    rain = [
        event_record(text=f"rain at {n}", actor="luna", ts=START + timedelta(hours=n))[0]
        for n in range(2, 6)
    ]
    html = admin_client.get(reverse("lens-search-page"), {"q": "physio"}).content.decode()
    assert f"<code>event:{asked.pk}</code>" in html and "how was the <mark>physio</mark>?" in html
    assert f"<code>event:{answer.pk}</code>" in html and "found by the turns before it" in html
    # The turn after the last one the question's words reach (the index reads the two turns
    # before each with it) is beside a match: shown around that one, not as a hit of its own.
    assert f"<code>event:{rain[0].pk}</code>" in html
    assert f"<code>event:{rain[1].pk}</code>" not in html and "luna: rain at 3" in html
    assert "Sore but fine." in html and "recall(" not in html and "&lt;say&gt;" not in html


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
