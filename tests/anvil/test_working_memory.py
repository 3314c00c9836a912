"""Working memory in the Anvil (``anvil.working_memory``): the live score, items added and edited
by the Gem's rules, status changes with a reason, near duplicates beside their twins, Mira's
entries."""

from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.admin.models import ADDITION, CHANGE, LogEntry
from django.contrib.auth.models import Permission
from django.contrib.messages import get_messages
from django.db import connections
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape

from events.models import Event
from gem.models import Forgotten, Fragment, MiraEntry, WorkingMemory, WorkingMemorySource
from gem.services import time_zone_set, working_memory_create
from gem.state import state_set
from silentstar.words import moment_said
from tests.anvil.conftest import log_messages

pytestmark = pytest.mark.django_db(databases="__all__")


def test_it_lists_active_items_by_live_score(admin_client):
    now = timezone.now()
    fresh = WorkingMemory.objects.create(type="feeling", content="fresh", refreshed_at=now)
    older = WorkingMemory.objects.create(
        type="feeling", content="older", refreshed_at=now - timedelta(hours=5)
    )
    done = WorkingMemory.objects.create(type="thought", content="done", status="resolved")
    url = reverse("admin:gem_workingmemory_changelist")
    changelist = admin_client.get(url).context["cl"]
    column = changelist.list_display.index("live_score")

    strongest_first = admin_client.get(url, {"o": f"-{column}"}).context["cl"].result_list
    weakest_first = admin_client.get(url, {"o": f"{column}"}).context["cl"].result_list

    assert [item.pk for item in strongest_first] == [fresh.pk, older.pk, done.pk]
    assert [item.pk for item in weakest_first] == [done.pk, older.pk, fresh.pk]
    scores = {item.pk: item.live_score for item in strongest_first}
    assert scores[fresh.pk] > scores[older.pk] > 0
    assert scores[done.pk] is None


def test_it_changes_status_only_with_a_reason_and_keeps_it(admin_client, admin_user):
    item = WorkingMemory.objects.create(type="plan", content="buy tea")
    url = reverse("admin:gem_workingmemory_changelist")
    chosen = {"action": "status_change", "_selected_action": [item.pk]}

    asked = admin_client.post(url, chosen)
    assert "Change the status of 1 item:" in asked.content.decode()
    refused = admin_client.post(url, {**chosen, "apply": "1", "status": "resolved", "reason": " "})
    assert refused.status_code == 200
    assert WorkingMemory.objects.get().status == "active"

    done = admin_client.post(
        url, {**chosen, "apply": "1", "status": "resolved", "reason": "bought it on Friday"}
    )

    assert done.status_code == 302
    item.refresh_from_db()
    assert item.status == "resolved"
    assert item.resolved_at is not None
    assert log_messages() == ["Status active → resolved: bought it on Friday"]
    history = admin_client.get(reverse("admin:gem_workingmemory_history", args=[item.pk]))
    assert "bought it on Friday" in history.content.decode()


def test_it_creates_an_item_of_any_type_as_the_person(admin_client):
    for type_ in ("secret", "pattern"):
        response = admin_client.post(
            reverse("admin:gem_workingmemory_add"),
            {
                "type": type_,
                "content": f"a {type_}",
                "subject": "",
                "due_0": "",
                "due_1": "",
                "refs-TOTAL_FORMS": "0",
                "refs-INITIAL_FORMS": "0",
            },
        )
        assert response.status_code == 302
    items = WorkingMemory.objects.order_by("pk")
    assert [(i.type, i.actor, i.status) for i in items] == [
        ("secret", "admin", "active"),
        ("pattern", "admin", "active"),
    ]
    assert LogEntry.objects.filter(action_flag=ADDITION).count() == 2


def add_item(client, type_: str, content: str, subject: str = ""):
    return client.post(
        reverse("admin:gem_workingmemory_add"),
        {
            "type": type_,
            "content": content,
            "subject": subject,
            "due_0": "",
            "due_1": "",
            "refs-TOTAL_FORMS": "0",
            "refs-INITIAL_FORMS": "0",
        },
    )


def test_a_person_hides_a_dated_plan_and_is_told_what_cannot_be_hidden(admin_client):
    url = reverse("admin:gem_workingmemory_add")
    fields = {"subject": "", "refs-TOTAL_FORMS": "0", "refs-INITIAL_FORMS": "0", "hidden": "on"}
    undated = {**fields, "type": "plan", "content": "a surprise", "due_0": "", "due_1": ""}
    pin = {**fields, "type": "pin", "content": "tea", "due_0": "2030-05-01", "due_1": "18:00"}

    assert "A hidden plan needs a due date" in admin_client.post(url, undated).text
    assert "Only a plan can be hidden." in admin_client.post(url, pin).text
    assert not WorkingMemory.objects.exists()
    dated = {**undated, "due_0": "2030-05-01", "due_1": "18:00"}
    assert admin_client.post(url, dated).status_code == 302
    plan = WorkingMemory.objects.get()
    assert plan.hidden and plan.due is not None

    change = {**dated, "content": "a surprise party"}
    del change["hidden"]
    response = admin_client.post(reverse("admin:gem_workingmemory_change", args=[plan.pk]), change)

    assert response.status_code == 302
    plan.refresh_from_db()
    assert not plan.hidden and plan.content == "a surprise party"
    assert "Edited content, hidden" in LogEntry.objects.latest("pk").change_message


def test_it_adds_an_item_by_the_rules_every_writer_follows(admin_client, fragments):
    state_set("turn_counter", 12)
    old_feeling = WorkingMemory.objects.create(type="feeling", content="restless", turn=1)

    assert add_item(admin_client, "feeling", "calm " * 20).status_code == 302
    assert add_item(admin_client, "plan", "sew the fairy dress tomorrow at 3pm").status_code == 302

    old_feeling.refresh_from_db()
    assert old_feeling.status == "superseded"
    feeling = WorkingMemory.objects.get(type="feeling", status="active")
    assert len(feeling.content.split()) == 15
    plan = WorkingMemory.objects.get(type="plan")
    assert plan.due is not None and plan.due > timezone.now()
    assert (plan.turn, plan.actor) == (12, "admin")
    assert list(plan.fragments.values_list("key", flat=True)) == ["fairy"]


def test_it_refreshes_an_identical_item_instead_of_adding_one(admin_client):
    earlier = timezone.now() - timedelta(days=2)
    same = working_memory_create(
        type="pin", content="tea, no sugar", actor="luna", at=earlier, turn=1
    ).item

    assert add_item(admin_client, "pin", "tea, no sugar").status_code == 302

    same.refresh_from_db()
    assert WorkingMemory.objects.count() == 1
    assert same.refreshed_at > earlier


def test_it_shows_the_events_an_item_came_from(admin_client, django_assert_num_queries):
    said = Event.objects.create(content="I only drink <say>tea</say> without sugar", actor="luna")
    again = Event.objects.create(content="Tea, always tea.", actor="luna")
    item = WorkingMemory.objects.create(type="pin", content="tea, no sugar", event_id=again.pk)
    WorkingMemorySource.objects.create(wm=item, event_id=said.pk)
    WorkingMemorySource.objects.create(wm=item, event_id=again.pk)
    WorkingMemorySource.objects.create(wm=item, event_id=999)  # not in the event log

    # One query for the source events, one for the turns the decay picture counts.
    with django_assert_num_queries(2, connection=connections["events"]):
        response = admin_client.get(reverse("admin:gem_workingmemory_change", args=[item.pk]))

    page = response.content.decode()
    for event in (said, again):
        url = reverse("admin:events_event_change", args=[event.pk])
        assert f'<a href="{url}">#{event.pk}</a>' in page
        assert f"{moment_said(event.ts)} {event.actor}" in page
    assert escape("I only drink <say>tea</say> without sugar") in page
    assert "#999</a> (not in the event log)" in page


def test_it_shows_the_event_of_an_item_tagged_in_a_turn(admin_client):
    said = Event.objects.create(content="<plan>call mum</plan>", actor="luna")
    item = WorkingMemory.objects.create(type="plan", content="call mum", event_id=said.pk)

    page = admin_client.get(reverse("admin:gem_workingmemory_change", args=[item.pk]))

    assert escape("<plan>call mum</plan>") in page.content.decode()


def test_it_does_not_change_status_from_the_plain_form(admin_client):
    item = WorkingMemory.objects.create(type="pin", content="tea")
    admin_client.post(
        reverse("admin:gem_workingmemory_change", args=[item.pk]),
        {
            "type": "pin",
            "content": "tea, no sugar",
            "status": "dropped",
            "subject": "",
            "due_0": "",
            "due_1": "",
            "refs-TOTAL_FORMS": "0",
            "refs-INITIAL_FORMS": "0",
        },
    )
    item.refresh_from_db()
    assert (item.content, item.status) == ("tea, no sugar", "active")


def test_it_lists_working_memory_with_nothing_active(admin_client):
    WorkingMemory.objects.create(type="thought", content="done", status="resolved")
    url = reverse("admin:gem_workingmemory_changelist")
    column = admin_client.get(url).context["cl"].list_display.index("live_score")
    response = admin_client.get(url, {"o": f"-{column}"})
    assert [item.live_score for item in response.context["cl"].result_list] == [None]
    assert 'class="field-live_score">—</td>' in response.content.decode()


def test_it_changes_one_items_status_from_its_page(admin_client):
    item = WorkingMemory.objects.create(type="plan", content="buy tea")
    change = reverse("admin:gem_workingmemory_change", args=[item.pk])
    status = reverse("admin:gem_workingmemory_status", args=[item.pk])
    assert status in admin_client.get(change).content.decode()
    assert "Change the status of 1 item:" in admin_client.get(status).content.decode()

    response = admin_client.post(
        status,
        {"_selected_action": [item.pk], "apply": "1", "status": "dropped", "reason": "not now"},
    )

    assert response.url == change
    assert WorkingMemory.objects.get().status == "dropped"
    assert log_messages() == ["Status active → dropped: not now"]


# --- Importance, valence and near duplicates ------------------------------------------------


def add_scored_item(client, type_: str, content: str, importance="", valence=""):
    return client.post(
        reverse("admin:gem_workingmemory_add"),
        {
            "type": type_,
            "content": content,
            "subject": "",
            "due_0": "",
            "due_1": "",
            "importance": importance,
            "valence": valence,
            "refs-TOTAL_FORMS": "0",
            "refs-INITIAL_FORMS": "0",
        },
    )


def change_item(client, item: WorkingMemory, **fields):
    form = {
        "type": item.type,
        "content": item.content,
        "subject": item.subject,
        "due_0": "",
        "due_1": "",
        "importance": item.importance,
        "valence": item.valence,
        "refs-TOTAL_FORMS": "0",
        "refs-INITIAL_FORMS": "0",
    }
    return client.post(
        reverse("admin:gem_workingmemory_change", args=[item.pk]), {**form, **fields}
    )


def test_it_scores_an_added_item_unless_the_person_gives_the_numbers(admin_client):
    assert add_scored_item(admin_client, "thought", "I love the quiet garden").status_code == 302
    assert (
        add_scored_item(admin_client, "pin", "tea at four", importance="0.9", valence="-0.2")
    ).status_code == 302

    scored, given = WorkingMemory.objects.order_by("pk")
    assert scored.valence > 0.3
    assert scored.importance > 0.5
    assert not scored.importance_edited
    assert (given.importance, given.valence, given.importance_edited) == (0.9, -0.2, True)


def test_it_refuses_importance_and_valence_out_of_range_on_the_add_form(admin_client):
    response = add_scored_item(admin_client, "pin", "tea", importance="1.5", valence="-3")

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert errors["importance"] == ["Importance runs from 0 to 1."]
    assert errors["valence"] == ["Valence runs from -1 to +1."]
    assert not WorkingMemory.objects.exists()


def test_it_marks_importance_edited_only_when_the_person_changes_a_number(admin_client):
    item = WorkingMemory.objects.create(type="thought", content="tea", importance=0.6, valence=0.1)
    change = reverse("admin:gem_workingmemory_change", args=[item.pk])
    page = admin_client.get(change).content.decode()
    assert item.semantic_hash in page
    assert 'name="importance"' in page
    assert 'name="valence"' in page

    assert change_item(admin_client, item, content="tea with honey").status_code == 302
    item.refresh_from_db()
    assert (item.content, item.importance_edited) == ("tea with honey", False)

    assert change_item(admin_client, item, importance="", valence="").status_code == 302
    item.refresh_from_db()
    assert (item.importance, item.valence, item.importance_edited) == (0.6, 0.1, False)

    assert change_item(admin_client, item, valence="-0.5").status_code == 302
    item.refresh_from_db()
    assert (item.importance, item.valence, item.importance_edited) == (0.6, -0.5, True)


def test_it_refuses_out_of_range_numbers_on_the_change_form(admin_client):
    item = WorkingMemory.objects.create(type="thought", content="tea")

    response = change_item(admin_client, item, importance="-0.1")

    assert response.context["adminform"].form.errors["importance"] == [
        "Importance runs from 0 to 1."
    ]
    item.refresh_from_db()
    assert (item.importance, item.importance_edited) == (0.5, False)


@pytest.fixture
def cilantro(admin_client):
    """The cilantro pair of the Anvil's show: the second nearly repeats the first."""
    add_scored_item(admin_client, "pin", "no cilantro in recipes")
    add_scored_item(admin_client, "pin", "no cilantro in ANY recipe suggestions!")
    return WorkingMemory.objects.order_by("pk")


def test_it_flags_the_cilantro_pair_and_refreshes_a_retag_in_other_spacing_and_case(
    admin_client, cilantro
):
    first, near = cilantro
    assert near.near_duplicate_of == first
    assert first.near_duplicate_of is None
    importance_before = first.importance

    assert add_scored_item(admin_client, "pin", "No   CILANTRO in Recipes").status_code == 302

    assert WorkingMemory.objects.count() == 2
    first.refresh_from_db()
    assert first.refreshed_at > first.created_at
    assert first.importance > importance_before


def test_it_lists_near_duplicates_to_review_with_a_link_to_the_twin(admin_client, cilantro):
    first, near = cilantro
    url = reverse("admin:gem_workingmemory_changelist")

    everything = admin_client.get(url)
    to_review = admin_client.get(url, {"near": "review"})

    assert {item.pk for item in everything.context["cl"].result_list} == {first.pk, near.pk}
    assert [item.pk for item in to_review.context["cl"].result_list] == [near.pk]
    twin_url = reverse("admin:gem_workingmemory_change", args=[first.pk])
    assert f'<a class="anvil-twin" href="{twin_url}">near duplicate of #{first.pk}</a>' in (
        to_review.content.decode()
    )
    assert "near duplicates to review" in everything.content.decode()


def test_it_shows_a_near_duplicate_beside_its_twin(admin_client, cilantro):
    first, near = cilantro

    flagged = admin_client.get(reverse("admin:gem_workingmemory_change", args=[near.pk]))
    unflagged = admin_client.get(reverse("admin:gem_workingmemory_change", args=[first.pk]))

    page = flagged.content.decode()
    assert "Near duplicate to review" in page
    assert "no cilantro in recipes" in page
    assert "no cilantro in ANY recipe suggestions!" in page
    assert reverse("admin:gem_workingmemory_twin", args=[near.pk]) in page
    assert "Near duplicate to review" not in unflagged.content.decode()


def test_it_keeps_both_twins_and_logs_the_decision(admin_client, cilantro):
    first, near = cilantro
    twin = reverse("admin:gem_workingmemory_twin", args=[near.pk])

    response = admin_client.post(twin, {"keep_both": "1", "reason": ""})

    assert response.url == reverse("admin:gem_workingmemory_change", args=[near.pk])
    near.refresh_from_db()
    assert near.near_duplicate_of is None
    assert list(WorkingMemory.objects.values_list("status", flat=True)) == ["active", "active"]
    assert log_messages()[-1] == f"Kept beside its near duplicate #{first.pk}"


def test_it_drops_a_near_duplicate_only_with_a_reason(admin_client, cilantro):
    first, near = cilantro
    twin = reverse("admin:gem_workingmemory_twin", args=[near.pk])

    refused = admin_client.post(twin, {"drop_this": "1", "reason": "  "})
    assert [str(m) for m in get_messages(refused.wsgi_request)][-1] == (
        "Say why it is dropped: the reason is kept in its history."
    )
    near.refresh_from_db()
    assert (near.status, near.near_duplicate_of) == ("active", first)

    admin_client.post(twin, {"drop_this": "1", "reason": "the same wish"})

    near.refresh_from_db()
    assert (near.status, near.near_duplicate_of) == ("dropped", None)
    assert near.resolved_at is not None
    assert log_messages()[-2:] == [
        f"Status active → dropped: near duplicate of #{first.pk}: the same wish",
        f"Reviewed beside #{first.pk}: #{near.pk} dropped",
    ]


def test_it_drops_the_twin_and_keeps_the_near_duplicate(admin_client, cilantro):
    first, near = cilantro

    admin_client.post(
        reverse("admin:gem_workingmemory_twin", args=[near.pk]),
        {"drop_twin": "1", "reason": "the newer one says more"},
    )

    first.refresh_from_db()
    near.refresh_from_db()
    assert (first.status, near.status, near.near_duplicate_of) == ("dropped", "active", None)
    assert LogEntry.objects.filter(object_id=str(first.pk), action_flag=CHANGE).exists()


def test_it_lets_a_reader_see_twins_but_not_decide(client, django_user_model, cilantro):
    first, near = cilantro
    reader = django_user_model.objects.create_user("reader", password="x", is_staff=True)
    reader.user_permissions.set(
        Permission.objects.filter(codename__in=["use_memory", "view_workingmemory"])
    )
    client.force_login(reader)

    response = client.post(
        reverse("admin:gem_workingmemory_twin", args=[near.pk]), {"keep_both": "1"}
    )

    assert response.status_code == 403
    near.refresh_from_db()
    assert near.near_duplicate_of == first


def test_it_shows_imported_mira_entries_without_letting_anyone_change_them(admin_client):
    item = WorkingMemory.objects.create(type="pattern", content="I am the pattern")
    row = MiraEntry.objects.create(
        mira_id="mem_001", working_memory=item, entry={"id": "mem_001"}, written={}
    )

    listed = admin_client.get(reverse("admin:gem_miraentry_changelist"))
    change = admin_client.post(reverse("admin:gem_miraentry_change", args=[row.pk]), {})

    assert "mem_001" in listed.content.decode()
    assert admin_client.get(reverse("admin:gem_miraentry_add")).status_code == 403
    assert change.status_code == 403


def test_an_edit_that_makes_a_thought_the_feeling_supersedes_the_active_feeling(admin_client):
    at = timezone.now()
    feeling = working_memory_create(type="feeling", content="calm", actor="claude", at=at, turn=1)
    thought = working_memory_create(
        type="thought", content="restless tonight", actor="claude", at=at, turn=1
    ).item

    assert change_item(admin_client, thought, type="feeling").status_code == 302

    feeling.item.refresh_from_db()
    thought.refresh_from_db()
    assert (thought.type, thought.status) == ("feeling", "active")
    assert feeling.item.status == "superseded"
    assert list(WorkingMemory.objects.filter(type="feeling", status="active")) == [thought]
    entry = LogEntry.objects.filter(object_id=str(thought.pk)).latest("action_time")
    assert "Edited type" in entry.change_message and f"#{feeling.item.pk}" in entry.change_message


def test_an_edit_of_a_plans_words_moves_its_due_date(admin_client, settings):
    written = timezone.now()
    plan = working_memory_create(
        type="plan", content="call the physio friday at 5pm", actor="luna", at=written, turn=1
    ).item
    assert plan.due is not None
    shown = timezone.localtime(plan.due)
    response = change_item(
        admin_client,
        plan,
        content="call the physio saturday at noon",
        due_0=shown.strftime("%Y-%m-%d"),
        due_1=shown.strftime("%H:%M:%S"),
    )
    assert response.status_code == 302
    plan.refresh_from_db()
    due = timezone.localtime(plan.due)
    assert (due.strftime("%A"), due.hour, due.minute) == ("Saturday", 12, 0)
    # The coming one: the first Saturday after the day it was written (gem/due.py).
    assert 1 <= (due.date() - timezone.localtime(written).date()).days <= 7


def test_an_edited_content_is_rehashed_and_its_twin_found(admin_client):
    at = timezone.now()
    twin = working_memory_create(
        type="pin", content="no cilantro in recipes", actor="luna", at=at, turn=1
    ).item
    item = working_memory_create(type="pin", content="tea at four", actor="luna", at=at, turn=1)
    item = item.item
    assert item.near_duplicate_of_id is None

    assert change_item(admin_client, item, content="No  Cilantro in RECIPES!").status_code == 302

    item.refresh_from_db()
    assert item.semantic_hash == twin.semantic_hash
    assert item.near_duplicate_of_id == twin.pk


def test_a_link_added_on_an_items_page_is_in_the_admin_log(admin_client):
    Fragment.objects.create(key="garden")
    item = working_memory_create(
        type="thought", content="the roses again", actor="luna", at=timezone.now(), turn=1
    ).item
    response = change_item(
        admin_client,
        item,
        **{
            "refs-TOTAL_FORMS": "1",
            "refs-0-fragment": "garden",
            "refs-0-wm": str(item.pk),
            "refs-0-id": "",
        },
    )
    assert response.status_code == 302
    assert list(item.refs.values_list("fragment_id", flat=True)) == ["garden"]
    entry = LogEntry.objects.filter(object_id=str(item.pk)).latest("action_time")
    assert "garden" in entry.get_change_message()


def test_it_forgets_the_selected_items(admin_client):
    item = WorkingMemory.objects.create(type="pin", content="my old address")

    done = admin_client.post(
        reverse("admin:gem_workingmemory_changelist"),
        {"action": "forget_selected", "_selected_action": [item.pk]},
        follow=True,
    )

    assert "Forgot 1 item: dropped, and their words are never staged again." in done.text
    assert WorkingMemory.objects.get().status == "dropped"
    assert Forgotten.objects.get().content == "my old address"


def test_the_list_says_a_plans_due_in_the_owners_zone(admin_client):
    time_zone_set(name="Asia/Tokyo")
    WorkingMemory.objects.create(
        type="plan", content="the dentist", due=datetime(2031, 12, 6, 3, 34, tzinfo=UTC)
    )
    page = admin_client.get(reverse("admin:gem_workingmemory_changelist")).text
    assert 'class="field-due_date">6 Dec 2031, 12:34</td>' in page
