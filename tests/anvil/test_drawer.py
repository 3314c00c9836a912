from datetime import timedelta

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Permission, User
from django.urls import reverse
from django.utils import timezone

from anvil.drawer import PLAN_DAYS, drawer_read
from events.models import Event, Turn, TurnStatus
from gem.models import Forgotten, WorkingMemory
from gem.services import working_memory_create
from mirror.models import TagSuggestion

pytestmark = pytest.mark.django_db(databases="__all__")

DRAWER = "admin:drawer"


def item(content, *, type="pin", actor="", subject="", due=None):
    return working_memory_create(
        type=type, content=content, actor=actor, subject=subject, at=timezone.now(), turn=1, due=due
    ).item


@pytest.fixture
def memory():
    now = timezone.now()
    return {
        "tea": item("luna drinks tea without sugar", actor="luna"),
        "walk": item("walk by the river", type="plan", actor="renki", due=now + timedelta(days=2)),
        "trip": item("the trip north", type="plan", actor="renki", due=now + timedelta(days=30)),
        "about": item("she keeps a blue notebook", subject="luna", actor="claude"),
        "gone": WorkingMemory.objects.create(type="pin", content="long gone", status="dropped"),
    }


@pytest.fixture
def pending():
    return [
        TagSuggestion.objects.create(
            proposer="compass", type="pin", content="likes rain", subject="luna"
        ),
        TagSuggestion.objects.create(
            proposer="compass", type="thought", content="a quiet week", subject="renki"
        ),
    ]


def test_the_drawer_lists_what_lingers_strongest_first_with_plans_due_soon(admin_user, memory):
    drawer = drawer_read(admin_user)
    shown = [entry.id for entry in drawer.items]
    assert set(shown) == {memory[k].pk for k in ("tea", "walk", "trip", "about")}
    scores = [entry.score for entry in drawer.items]
    assert scores == sorted(scores, reverse=True)
    # Only the plan due within the days the drawer looks ahead; the one in a month is not.
    assert [plan.id for plan in drawer.plans] == [memory["walk"].pk]
    assert PLAN_DAYS < 30


def test_an_identity_filter_keeps_what_they_said_and_what_is_about_them(
    admin_user, memory, pending
):
    drawer = drawer_read(admin_user, identity="luna")
    assert {entry.id for entry in drawer.items} == {memory["tea"].pk, memory["about"].pk}
    assert [s.content for s in drawer.suggestions] == ["likes rain"]
    assert drawer.plans == []


def test_the_badge_counts_what_waits_for_a_decision(admin_client, pending):
    response = admin_client.get(reverse("admin:drawer-badge"))
    assert response.status_code == 200
    assert '<span class="memory-count">2</span>' in response.text
    TagSuggestion.objects.filter(pk=pending[0].pk).update(status="rejected")
    assert (
        '<span class="memory-count">1</span>'
        in admin_client.get(reverse("admin:drawer-badge")).text
    )


def test_the_drawer_is_a_page_without_javascript_and_a_panel_with_htmx(admin_client, memory):
    page = admin_client.get(reverse(DRAWER))
    assert page.status_code == 200
    assert "<html" in page.text and "walk by the river" in page.text
    panel = admin_client.get(reverse(DRAWER), headers={"HX-Request": "true"})
    assert "<html" not in panel.text
    assert 'id="drawer-contents"' in panel.text and "luna drinks tea" in panel.text
    assert "long gone" not in panel.text


def test_an_unknown_identity_shows_everyone(admin_client, memory):
    response = admin_client.get(reverse(DRAWER), {"identity": "nobody"})
    assert "luna drinks tea" in response.text and "walk by the river" in response.text


def test_forget_drops_the_item_keeps_its_words_forgotten_and_logs_it(admin_client, memory):
    tea = memory["tea"]
    response = admin_client.post(
        reverse("admin:drawer-forget", args=[tea.pk]), headers={"HX-Request": "true"}
    )
    assert response.status_code == 200
    tea.refresh_from_db()
    assert tea.status == "dropped"
    assert Forgotten.objects.filter(content=tea.content).exists()
    assert "Forgot “luna drinks tea without sugar”" in response.text
    assert "luna drinks tea" not in response.text.split("</ul>", 1)[1]  # gone from the list
    assert LogEntry.objects.filter(object_id=str(tea.pk), change_message__contains="forgotten")


def test_a_plain_post_is_answered_with_the_drawer_page(admin_client, memory):
    response = admin_client.post(
        reverse("admin:drawer-forget", args=[memory["tea"].pk]), {"identity": "luna"}
    )
    assert response.status_code == 303
    assert response["Location"] == reverse(DRAWER) + "?identity=luna"


def test_edit_changes_the_words_and_a_plans_due_date(admin_client, memory):
    walk = memory["walk"]
    due = (timezone.localtime() + timedelta(days=3)).replace(second=0, microsecond=0)
    response = admin_client.post(
        reverse("admin:drawer-edit", args=[walk.pk]),
        {"content": "walk by the sea", "due": due.strftime("%Y-%m-%dT%H:%M")},
        headers={"HX-Request": "true"},
    )
    assert "Saved: “walk by the sea”" in response.text
    walk.refresh_from_db()
    assert (walk.content, walk.due) == ("walk by the sea", due)
    assert LogEntry.objects.filter(object_id=str(walk.pk)).exists()


def test_an_empty_edit_is_refused_in_words(admin_client, memory):
    response = admin_client.post(
        reverse("admin:drawer-edit", args=[memory["tea"].pk]),
        {"content": ""},
        headers={"HX-Request": "true"},
    )
    assert "Not saved: Write what the item says (or forget it)." in response.text
    memory["tea"].refresh_from_db()
    assert memory["tea"].content == "luna drinks tea without sugar"


def test_promote_with_an_edit_and_reject(admin_client, pending):
    rain, week = pending
    response = admin_client.post(
        reverse("admin:drawer-decide", args=[rain.pk]),
        {"decision": "promote", "content": "likes summer rain"},
        headers={"HX-Request": "true"},
    )
    assert "Now in working memory: “likes summer rain”" in response.text
    rain.refresh_from_db()
    assert rain.status == "promoted"
    assert WorkingMemory.objects.get(pk=rain.promoted_wm_id).content == "likes summer rain"
    admin_client.post(reverse("admin:drawer-decide", args=[week.pk]), {"decision": "reject"})
    week.refresh_from_db()
    assert week.status == "rejected"
    assert LogEntry.objects.filter(object_id=str(week.pk), change_message="Rejected").exists()


def test_a_decision_already_made_is_refused_in_words(admin_client, pending):
    rain = pending[0]
    TagSuggestion.objects.filter(pk=rain.pk).update(status="rejected")
    response = admin_client.post(
        reverse("admin:drawer-decide", args=[rain.pk]),
        {"decision": "promote"},
        headers={"HX-Request": "true"},
    )
    assert "Not decided:" in response.text
    assert "already" in response.text


def test_the_drawer_links_the_last_replys_context(admin_client):
    event = Event.objects.create(content="hello", actor="luna")
    reply = Event.objects.create(content="hi", actor="claude")
    turn = Turn.objects.create(event=event, number=1, status=TurnStatus.DONE, reply_event=reply)
    response = admin_client.get(reverse(DRAWER), headers={"HX-Request": "true"})
    assert reverse("admin:inspector", args=[turn.pk]) in response.text


def test_viewing_needs_the_anvils_permissions_and_acting_its_change_permissions(client, memory):
    user = User.objects.create_user("reader", password="pw", is_staff=True)
    user.user_permissions.add(
        *Permission.objects.filter(
            codename__in=["use_memory", "view_workingmemory", "view_tagsuggestion"]
        )
    )
    client.force_login(user)
    response = client.get(reverse(DRAWER), headers={"HX-Request": "true"})
    assert "luna drinks tea" in response.text
    assert "Forget" not in response.text
    forbidden = client.post(reverse("admin:drawer-forget", args=[memory["tea"].pk]))
    assert forbidden.status_code == 403
    memory["tea"].refresh_from_db()
    assert memory["tea"].status == "active"


def test_someone_not_staff_is_sent_to_sign_in(client, memory):
    user = User.objects.create_user("guest", password="pw")
    user.user_permissions.add(Permission.objects.get(codename="use_memory"))
    client.force_login(user)
    response = client.get(reverse(DRAWER))
    assert response.status_code == 302


def test_she_writes_first_only_for_the_reasons_turned_on_in_the_drawer(admin_client):
    from heart.nudges import nudge_reasons_on

    page = admin_client.get(reverse(DRAWER), headers={"HX-Request": "true"}).text
    assert "She may write first" in page
    assert 'name="reasons" value="silence">' in page  # each off at first
    response = admin_client.post(
        reverse("admin:drawer-writing-first"),
        {"reasons": ["silence", "plan", "moon"]},
        headers={"HX-Request": "true"},
    )
    assert nudge_reasons_on() == {"silence", "plan"}
    assert "She may write first for a plan coming due, a long silence." in response.text
    assert 'name="reasons" value="silence" checked>' in response.text
    admin_client.post(reverse("admin:drawer-writing-first"), {})
    assert nudge_reasons_on() == set()


def test_a_due_date_left_as_shown_is_no_edit(admin_client):
    due = timezone.now().replace(microsecond=0) + timedelta(days=3, seconds=17)
    plan = TagSuggestion.objects.create(
        proposer="compass", type="plan", content="call mara", due=due
    )
    shown = timezone.localtime(due).strftime("%Y-%m-%dT%H:%M")  # as the drawer's box shows it
    admin_client.post(
        reverse("admin:drawer-decide", args=[plan.pk]),
        {"decision": "promote", "content": "call mara", "due": shown},
    )
    plan.refresh_from_db()
    assert WorkingMemory.objects.get(pk=plan.promoted_wm_id).due == due  # not cut to the minute
    logged = LogEntry.objects.filter(change_message__startswith="Promoted to working memory")
    assert [entry.change_message for entry in logged] == [
        f"Promoted to working memory item {plan.promoted_wm_id}"  # no ", with due edited"
    ]
