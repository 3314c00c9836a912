"""The Anvil's Costs page (anvil/costs.py): a picture and a table of what the calls cost."""

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse
from django.utils import timezone

from anvil.costs import BARS_HEIGHT, chart_of, scale_top
from gem.access import REFUSAL
from ledger.costs import costs_over
from ledger.models import ModelCall
from silentstar.pricing import PRICES

pytestmark = pytest.mark.django_db(databases="__all__")

URL = "/admin/costs/"
TOKENS = {
    "input_tokens": 1000,
    "output_tokens": 200,
    "cache_read_tokens": 5000,
    "cache_write_5m_tokens": 300,
    "cache_write_1h_tokens": 100,
}


def made(*, days_ago=0, component="heart", model="claude-opus-5-5", **tokens):
    return ModelCall.objects.create(
        ts=timezone.now() - timedelta(days=days_ago),
        component=component,
        model=model,
        offline=False,
        **(TOKENS | tokens),
    )


@pytest.fixture
def calls():
    made()
    made(component="mirror-summarise")
    made(days_ago=3, component="mirror-clean", model="claude-haiku-5-5", input_tokens=7654321)
    made(days_ago=40)


def test_it_draws_each_day_and_tables_the_same_figures_for_the_owner(admin_client, calls):
    response = admin_client.get(URL)

    assert response.status_code == 200
    html = response.text
    assert re.search(r'<svg class="anvil-costs-chart"[^>]* role="img" aria-labelledby=', html)
    assert '<title id="costs-chart-title">' in html and '<desc id="costs-chart-desc">' in html
    assert html.count('<rect class="anvil-costs-series-') == 3  # two today, one three days ago
    assert html.count('<rect class="anvil-costs-share"') == 2
    assert "<table>" in html and "7,654,321" in html  # the table carries the numbers
    assert "$0.0113" in html  # a heart call at Opus 5.5's prices
    assert "30 days" in html and 'href="?days=7"' in html and 'href="?days=90"' in html
    assert 'href="/static/anvil/costs.css"' in html


def test_it_shows_the_days_chosen(admin_client, calls):
    thirty = admin_client.get(URL, {"days": 30}).text
    seven = admin_client.get(URL, {"days": 7}).text
    ninety = admin_client.get(URL, {"days": 90}).text
    assert '<strong aria-current="page">7 days</strong>' in seven
    assert re.search(r"<strong>\$[\d.]+</strong> for 3 calls", seven)
    assert re.search(r"<strong>\$[\d.]+</strong> for 3 calls", thirty)
    assert re.search(r"<strong>\$[\d.]+</strong> for 4 calls", ninety)


def test_it_shows_the_default_days_for_a_choice_it_does_not_offer(admin_client, calls):
    response = admin_client.get(URL, {"days": 12})
    assert response.status_code == 200
    assert "Choose 7, 30 or 90 days; the last 30 are shown." in response.text


def test_it_says_when_there_were_no_calls(admin_client):
    response = admin_client.get(URL)
    assert response.status_code == 200
    assert "No calls to Claude in these days." in response.text
    assert "anvil-costs-chart" not in response.text


def test_it_is_listed_with_the_machinery_of_the_index(admin_client):
    html = admin_client.get(reverse("admin:index")).text
    machinery = html[html.index("Machinery") :]
    assert f'<a href="{URL}">Costs</a>' in machinery


def test_it_refuses_an_account_without_the_ledgers_view_permission(client, django_user_model):
    staff = django_user_model.objects.create_user("friend", password="x", is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="use_memory"))
    client.force_login(staff)

    assert client.get(URL).status_code == 403
    assert f'href="{URL}"' not in client.get(reverse("admin:index")).text
    staff.user_permissions.add(Permission.objects.get(codename="view_modelcall"))
    assert client.get(URL).status_code == 200


def test_it_refuses_an_account_without_the_memory_permission(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("stranger", is_staff=True))
    response = client.get(URL)
    assert response.status_code == 403 and REFUSAL in response.text


def test_it_sends_visitors_to_sign_in_and_answers_only_get(client, admin_client):
    response = client.get(URL)
    assert response.status_code == 302 and "login" in response.url
    assert admin_client.post(URL).status_code == 405


def test_the_bars_of_a_day_stack_to_its_dollars_on_the_scale(calls):
    costs = costs_over(days=7, prices=PRICES)
    chart = chart_of(costs)

    today = costs.days[-1]
    top = scale_top(max(day.total.dollars for day in costs.days))
    heights = [bar.height for bar in chart.bars if bar.x == chart.bars[-1].x]
    assert len(heights) == 2
    assert sum(heights) == pytest.approx(today.total.dollars / top * BARS_HEIGHT, abs=0.02)
    # The dearest day: the Haiku 5.5 call with 7.65 M input tokens, about $0.77.
    assert [tick.text for tick in chart.dollar_ticks] == ["$0", "$0.5", "$1"]


@pytest.mark.parametrize(
    ("largest", "top"), [(0, 1), (0.0113, 0.02), (0.02, 0.02), (3.2, 5), (7, 10), (45, 50)]
)
def test_the_dollar_axis_ends_at_one_two_or_five_times_a_power_of_ten(largest, top):
    assert scale_top(largest) == pytest.approx(top)
