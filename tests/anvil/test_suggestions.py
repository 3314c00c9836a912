from datetime import timedelta

import pytest
from django.contrib.admin.models import LogEntry
from django.db import connections
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from anvil.suggestions import TagSuggestionAdmin
from events.models import Correction, Event
from gem.models import Forgotten, WorkingMemory
from mirror.models import Summary, TagSuggestion
from mirror.services import suggestion_reject

pytestmark = pytest.mark.django_db(databases="__all__")

QUEUE = "admin:mirror_tagsuggestion_changelist"


@pytest.fixture
def summary():
    events = [
        Event.objects.create(content=text, actor=actor)
        for text, actor in [
            ("I only drink tea without sugar", "luna"),
            ("Noted: no sugar.", "claude"),
            ("And friday I buy more", "luna"),
        ]
    ]
    return Summary.objects.create(
        level="L0",
        first_event_id=events[0].pk,
        last_event_id=events[-1].pk,
        content="Luna was particular about tea, warmly.",
    )


@pytest.fixture
def suggestions(summary):
    return [
        TagSuggestion.objects.create(summary=summary, type="pin", content="tea, no sugar"),
        TagSuggestion.objects.create(summary=summary, type="plan", content="buy tea friday"),
        TagSuggestion.objects.create(
            summary=summary, type="thought", content="old", status="rejected"
        ),
    ]


def messages_of(response) -> str:
    return " ".join(str(message) for message in response.context["messages"])


def decide(client, action, suggestions):
    return client.post(
        reverse(QUEUE),
        {"action": action, "_selected_action": [s.pk for s in suggestions]},
        follow=True,
    )


def test_it_refuses_a_logged_out_visitor(client, suggestions):
    response = client.post(
        reverse(QUEUE), {"action": "promote_selected", "_selected_action": [suggestions[0].pk]}
    )
    assert response.status_code == 302
    assert "login" in response.url
    assert not WorkingMemory.objects.exists()


def test_it_opens_the_queue_on_pending_suggestions(admin_client, suggestions):
    pending = admin_client.get(reverse(QUEUE)).context["cl"].result_list
    assert sorted(s.pk for s in pending) == [suggestions[0].pk, suggestions[1].pk]
    everything = admin_client.get(reverse(QUEUE), {"status": "all"}).context["cl"].result_list
    assert len(everything) == 3


def test_it_shows_a_suggestion_with_its_summary_and_source_events(admin_client, suggestions):
    response = admin_client.get(
        reverse("admin:mirror_tagsuggestion_change", args=[suggestions[0].pk])
    )
    page = response.content.decode()
    assert "Luna was particular about tea, warmly." in page
    assert "I only drink tea without sugar" in page
    assert "And friday I buy more" in page
    assert 'name="_promote"' in page


def test_it_promotes_with_edits_from_the_suggestions_page(admin_client, suggestions):
    suggestion = suggestions[1]
    response = admin_client.post(
        reverse("admin:mirror_tagsuggestion_change", args=[suggestion.pk]),
        {"type": "plan", "content": "buy tea friday at 5pm", "subject": "tea", "_promote": "1"},
        follow=True,
    )
    item = WorkingMemory.objects.get()
    assert (item.type, item.content, item.subject) == ("plan", "buy tea friday at 5pm", "tea")
    suggestion.refresh_from_db()
    assert (suggestion.status, suggestion.promoted_wm_id) == ("promoted", item.pk)
    assert item.suggestion_id == suggestion.pk
    said = f"Promoted into working memory: “{item.content}” (item {item.pk})."
    assert said in messages_of(response)


def test_another_agents_plan_shows_its_due_and_reason_and_is_promoted_hidden(admin_client):
    due = timezone.now() + timedelta(days=6)
    plan = TagSuggestion.objects.create(
        proposer="compass",
        type="plan",
        content="a surprise dinner for Sam",
        due=due,
        hidden=True,
        reason="Sam's birthday is that week",
    )
    listed = admin_client.get(reverse("admin:mirror_tagsuggestion_changelist")).text
    assert "the Compass" in listed and "Sam&#x27;s birthday is that week" in listed
    assert "hidden until 48 h before" in listed

    local = timezone.localtime(due)
    response = admin_client.post(
        reverse("admin:mirror_tagsuggestion_change", args=[plan.pk]),
        {
            "type": "plan",
            "content": "a surprise dinner for Sam",
            "subject": "",
            "due_0": local.strftime("%Y-%m-%d"),
            "due_1": local.strftime("%H:%M:%S"),
            "hidden": "on",
            "_promote": "1",
        },
        follow=True,
    )

    item = WorkingMemory.objects.get()
    assert (item.hidden, item.actor, item.due) == (True, "compass", due)
    said = f"Promoted into working memory: “{item.content}” (item {item.pk})."
    assert said in messages_of(response)


def test_it_links_a_promoted_item_and_its_suggestion_both_ways(admin_client, suggestions):
    decide(admin_client, "promote_selected", [suggestions[0]])
    item = WorkingMemory.objects.get()
    suggestion_page = admin_client.get(
        reverse("admin:mirror_tagsuggestion_change", args=[suggestions[0].pk])
    ).content.decode()
    item_page = admin_client.get(
        reverse("admin:gem_workingmemory_change", args=[item.pk])
    ).content.decode()
    assert reverse("admin:gem_workingmemory_change", args=[item.pk]) in suggestion_page
    assert reverse("admin:mirror_tagsuggestion_change", args=[suggestions[0].pk]) in item_page
    assert "cannot be acted on again" in suggestion_page


def test_it_promotes_in_bulk_once(admin_client, suggestions):
    first = decide(admin_client, "promote_selected", suggestions[:2])
    assert "Promoted 2 suggestions into working memory: “tea, no sugar” (item" in messages_of(first)
    assert WorkingMemory.objects.count() == 2

    again = decide(admin_client, "promote_selected", suggestions)

    assert WorkingMemory.objects.count() == 2
    said = messages_of(again)
    assert "Promoted" not in said
    assert f"Suggestion {suggestions[0].pk} was already promoted." in said
    assert f"Suggestion {suggestions[2].pk} was already rejected." in said


def test_it_rejects_in_bulk_once_and_never_promotes_a_rejected_one(admin_client, suggestions):
    rejected = decide(admin_client, "reject_selected", suggestions[:2])
    assert "Rejected 2 suggestions: “tea, no sugar”, “buy tea friday”." in messages_of(rejected)
    assert set(TagSuggestion.objects.values_list("status", flat=True)) == {"rejected"}

    again = decide(admin_client, "promote_selected", suggestions[:1])

    assert "already rejected" in messages_of(again)
    assert not WorkingMemory.objects.exists()


def test_it_rejects_from_the_suggestions_page(admin_client, suggestions):
    suggestion = suggestions[0]
    admin_client.post(
        reverse("admin:mirror_tagsuggestion_change", args=[suggestion.pk]),
        {"type": "pin", "content": "tea, no sugar", "subject": "", "_reject": "1"},
    )
    suggestion.refresh_from_db()
    assert suggestion.status == "rejected"
    assert LogEntry.objects.filter(object_id=str(suggestion.pk), change_message="Rejected").exists()


def test_it_saves_a_persons_edits_and_leaves_the_suggestion_pending(admin_client, suggestions):
    suggestion = suggestions[0]
    admin_client.post(
        reverse("admin:mirror_tagsuggestion_change", args=[suggestion.pk]),
        {"type": "pin", "content": "tea, never sugar", "subject": "luna", "_save": "1"},
    )

    suggestion.refresh_from_db()
    assert (suggestion.content, suggestion.subject, suggestion.status) == (
        "tea, never sugar",
        "luna",
        "pending",
    )


def test_it_says_so_when_a_suggestion_was_decided_while_its_page_was_open(
    admin_client, admin_user, suggestions, monkeypatch
):
    """Someone else rejects the suggestion between the page's form and its save: the edits
    are refused in words, nothing is promoted and the rejection stands."""
    suggestion = suggestions[0]
    save_model = TagSuggestionAdmin.save_model

    def decided_meanwhile(admin, request, obj, form, change):
        suggestion_reject(suggestion_id=obj.pk, user_id=admin_user.pk)
        save_model(admin, request, obj, form, change)

    monkeypatch.setattr(TagSuggestionAdmin, "save_model", decided_meanwhile)
    page = reverse("admin:mirror_tagsuggestion_change", args=[suggestion.pk])
    response = admin_client.post(
        page, {"type": "pin", "content": "tea", "subject": "", "_promote": "1"}, follow=True
    )

    assert response.redirect_chain == [(page, 302)]
    assert f"Not saved: Suggestion {suggestion.pk} was already rejected" in messages_of(response)
    suggestion.refresh_from_db()
    assert (suggestion.content, suggestion.status) == ("tea, no sugar", "rejected")
    assert not WorkingMemory.objects.exists()
    assert not LogEntry.objects.filter(change_message__contains="content").exists()


def test_it_keeps_a_decided_suggestion_as_it_was(admin_client, suggestions):
    decided = suggestions[2]
    admin_client.post(
        reverse("admin:mirror_tagsuggestion_change", args=[decided.pk]),
        {"type": "pin", "content": "rewritten", "subject": "x", "_save": "1"},
    )
    decided.refresh_from_db()
    assert (decided.type, decided.content) == ("thought", "old")
    delete = reverse("admin:mirror_tagsuggestion_delete", args=[decided.pk])
    assert admin_client.post(delete, {"post": "yes"}).status_code == 403
    assert TagSuggestion.objects.count() == 3


def test_it_forgets_the_selected_suggestions(admin_client, suggestions):
    forgot = decide(admin_client, "forget_selected", suggestions[:1])

    assert "their words are never staged again" in messages_of(forgot)
    assert TagSuggestion.objects.get(pk=suggestions[0].pk).status == "rejected"
    assert Forgotten.objects.get().source == f"suggestion #{suggestions[0].pk}"


def test_the_summaries_waiting_to_be_written_again_are_listed_with_what_it_costs(admin_client):
    said = [Event.objects.create(actor="luna", content="x" * 400) for _ in range(3)]
    waiting = Summary.objects.create(
        level="L0", first_event_id=said[0].pk, last_event_id=said[2].pk, content="Talk."
    )
    Summary.objects.create(level="L0", first_event_id=said[2].pk + 1, last_event_id=said[2].pk + 5)
    Correction.objects.create(event=said[1], sequence=0, kind="retraction", made_by="owner")

    page = admin_client.get(reverse("admin:mirror_summary_changelist"), {"waiting": "yes"}).text

    assert page.count('class="field-id"') == 1 and f">{waiting.pk}<" in page
    assert "waits: reads 300 tokens of the log, about $0.0012" in page


def test_the_summaries_list_reads_the_corrections_once_a_page(admin_client):
    said = Event.objects.create(actor="luna", content="hello")
    for n in range(5):
        Summary.objects.create(level="L0", first_event_id=said.pk + n, last_event_id=said.pk + n)
    Correction.objects.create(event=said, sequence=0, kind="retraction", made_by="owner")

    with CaptureQueriesContext(connections["events"]) as read:
        assert admin_client.get(reverse("admin:mirror_summary_changelist")).status_code == 200

    assert sum("events_correction" in query["sql"] for query in read.captured_queries) == 1
