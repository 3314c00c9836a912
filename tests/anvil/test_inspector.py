"""The Anvil's context inspector (anvil/inspector.py): a page per turn, the owner's."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from gem.access import REFUSAL
from gem.models import WorkingMemory
from heart.models import ContextSnapshot
from heart.services import turn_submit
from heart.tasks import run_turns_task
from tests.heart.test_inspect import START, answered, item

pytestmark = pytest.mark.django_db(databases="__all__")


def url(turn) -> str:
    return reverse("admin:inspector", args=[turn.pk])


@pytest.fixture
def two_turns(fake_api, settings):
    """A first turn, then a second with a pin that fits, one the small budget leaves out and a
    feeling under the floor."""
    settings.BUDGET_WORKING_MEMORY = 20
    first = answered(fake_api, "<luna>hello</luna>", START)
    item("pin", "tea without sugar, always", at=START)
    # Small enough for the whole section, too big for what the first pin leaves of it.
    item("pin", "the blue umbrella by the door", at=START - timedelta(minutes=5))
    item("feeling", "restless", at=START - timedelta(hours=16))
    second = answered(fake_api, "<luna>and you?</luna>", START + timedelta(minutes=2))
    return first, second


def test_it_shows_the_owner_bars_items_reasons_cache_changes_and_text(admin_client, two_turns):
    first, second = two_turns
    response = admin_client.get(url(second))
    assert response.status_code == 200
    html = response.text
    assert "Context of turn 2" in html
    assert 'class="inspector-bar' in html and 'class="inspector-bar-used" width="' in html
    assert "of 20 tokens" in html
    assert "tea without sugar, always" in html
    assert "cut by the budget at rank 2 (needed" in html
    assert "under the 0.01 floor (score 0.003" in html
    assert "After the whole system prompt" in html and "read from the cache" in html
    assert f'href="{url(first)}" rel="prev"' in html
    assert "<strong>Lingering</strong> added" in html and 'class="anvil-worddiff"' in html
    snapshot = ContextSnapshot.objects.get(turn=second.pk)
    assert "## Message\nluna:\n&lt;luna&gt;and you?&lt;/luna&gt;</pre>" in html
    assert reverse("admin:heart_contextsnapshot_change", args=[snapshot.pk]) in html
    assert 'rel="next"' not in admin_client.get(url(second)).text
    assert f'href="{url(second)}" rel="next"' in admin_client.get(url(first)).text


def test_a_turn_without_a_snapshot_says_why(admin_client):
    turn = turn_submit(text="<luna>hello</luna>", actor="luna", at=START, enqueue=False)
    response = admin_client.get(url(turn))
    assert response.status_code == 200
    assert "This turn has not been answered yet" in response.text
    assert "Sections and budgets" not in response.text


def test_an_old_snapshot_shows_what_it_has_and_says_what_it_lacks(admin_client, fake_api):
    turn = answered(fake_api, "<luna>hello</luna>", START)
    ContextSnapshot.objects.filter(turn=turn.pk).update(
        items_included={}, token_counts={"total": 12}, inputs={}
    )
    html = admin_client.get(url(turn)).text
    assert "it does not say:" in html
    assert "where the prompt cache&#x27;s breakpoints were" in html
    assert "This snapshot does not say which events Recent held." in html


def test_it_answers_404_for_a_turn_that_is_not_there(admin_client):
    assert admin_client.get(reverse("admin:inspector", args=[404])).status_code == 404


def test_it_refuses_an_account_without_the_snapshots_view_permission(
    client, django_user_model, fake_api
):
    turn = answered(fake_api, "<luna>hello</luna>", START)
    staff = django_user_model.objects.create_user("friend", password="x", is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="use_memory"))
    client.force_login(staff)
    assert client.get(url(turn)).status_code == 403
    staff.user_permissions.add(Permission.objects.get(codename="view_contextsnapshot"))
    assert client.get(url(turn)).status_code == 200


def test_it_refuses_an_account_without_the_memory_permission(client, django_user_model, fake_api):
    turn = answered(fake_api, "<luna>hello</luna>", START)
    client.force_login(django_user_model.objects.create_user("stranger", is_staff=True))
    response = client.get(url(turn))
    assert response.status_code == 403 and REFUSAL in response.text


def test_it_sends_visitors_to_sign_in_and_answers_only_get(client, admin_client, fake_api):
    turn = answered(fake_api, "<luna>hello</luna>", START)
    response = client.get(url(turn))
    assert response.status_code == 302 and "login" in response.url
    assert admin_client.post(url(turn)).status_code == 405


# --- The links to it ----------------------------------------------------------------------------


def test_each_reply_on_the_chat_page_links_to_its_context_for_the_owner(admin_client, fake_api):
    turn = answered(fake_api, "<luna>hello</luna>", START, "<say>hi luna</say>")
    html = admin_client.get(reverse("heart-chat")).text
    assert f'id="event-{turn.reply_event_id}"' in html
    assert f'data-turn="{turn.pk}"' in html
    assert html.count('class="why"') == 1
    assert f'class="why" href="{url(turn)}"' in html
    partial = admin_client.get(reverse("heart-turn-detail", args=[turn.pk])).text
    assert f'class="why" href="{url(turn)}"' in partial


def test_the_chat_page_offers_no_link_to_an_account_the_anvil_would_refuse(
    client, django_user_model, fake_api
):
    answered(fake_api, "<luna>hello</luna>", START, "<say>hi luna</say>")
    friend = django_user_model.objects.create_user("friend", password="x")
    friend.user_permissions.add(Permission.objects.get(codename="use_memory"))
    client.force_login(friend)
    html = client.get(reverse("heart-chat")).text
    assert "hi luna" in html and 'class="why"' not in html


def test_the_turn_and_its_snapshot_in_the_anvil_link_to_it(admin_client, fake_api):
    turn = answered(fake_api, "<luna>hello</luna>", START)
    snapshot = ContextSnapshot.objects.get(turn=turn.pk)
    link = f'<a href="{url(turn)}">why she knew what she knew</a>'
    for page in (
        reverse("admin:events_turn_changelist"),
        reverse("admin:events_turn_change", args=[turn.pk]),
        reverse("admin:heart_contextsnapshot_changelist"),
        reverse("admin:heart_contextsnapshot_change", args=[snapshot.pk]),
    ):
        assert link in admin_client.get(page).text, page


def test_it_assembles_the_turn_again_and_says_it_agrees_or_what_changed(admin_client, two_turns):
    _first, second = two_turns
    html = admin_client.get(url(second)).text
    assert "the same as what Claude received, byte for byte" in html
    assert 'action="/admin/why/"' in html  # the question, asked of the last turns
    pin = WorkingMemory.objects.get(content="tea without sugar, always")
    WorkingMemory.objects.filter(pk=pin.pk).update(content="tea with honey, always")
    html = admin_client.get(url(second)).text
    assert "it differs from what Claude received in: <strong>Lingering</strong>" in html
    assert "<strong>Lingering</strong> changed" in html and 'class="anvil-worddiff"' in html


def test_it_says_a_turn_was_answered_by_the_offline_companion(admin_client, settings):
    settings.COMPANION_OFFLINE = True
    turn = turn_submit(text="<luna>hello</luna>", actor="luna", at=START, enqueue=False)
    run_turns_task(turn.pk)

    html = admin_client.get(url(turn)).text

    assert "done, answered by the offline companion</dd>" in html
    assert "I got your message, luna" in html  # the reply, with no label of its own
