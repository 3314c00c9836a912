import pytest
from django.contrib.auth.models import Permission, User
from django.urls import reverse

from anvil.waiting import decisions_waiting, waiting_for
from events.models import Correction, Event
from loom.models import LoomCall
from mirror.models import Summary, TagSuggestion

pytestmark = pytest.mark.django_db(databases="__all__")


@pytest.fixture
def waiting():
    """Two suggestions, a Loom draft and a summary written before a correction of its words."""
    said = Event.objects.create(content="<luna>tea at five</luna>", actor="luna")
    summary = Summary.objects.create(
        level="L0", first_event_id=said.pk, last_event_id=said.pk, content="Tea at five."
    )
    TagSuggestion.objects.create(summary=summary, type="pin", content="tea at five")
    TagSuggestion.objects.create(proposer="compass", type="thought", content="a calm week")
    TagSuggestion.objects.create(proposer="compass", type="pin", content="old", status="rejected")
    LoomCall.objects.create(
        agent="weaver", fragment_key="tea", status="done", draft_state="proposed"
    )
    LoomCall.objects.create(
        agent="weaver", fragment_key="tea", status="done", draft_state="applied"
    )
    Correction.objects.create(event=said, sequence=1, kind="edit", text="tea at six")


def test_it_counts_each_kind_of_what_waits_in_words(admin_user, waiting):
    kinds = waiting_for(admin_user)
    assert [kind.said for kind in kinds] == [
        "2 suggestions to decide on",
        "1 draft of the Loom to apply or drop",
        "1 summary to be written again after a correction",
    ]
    # The badge counts a person's decisions; the Mirror writes the summary again by itself.
    assert decisions_waiting(kinds) == 3


def test_each_kind_links_the_anvils_list_of_just_those(admin_client, waiting, admin_user):
    for kind in waiting_for(admin_user):
        response = admin_client.get(kind.url)
        assert response.status_code == 200
        shown = response.context["cl"].result_count
        assert shown == kind.count, kind.url


def test_nothing_waiting_is_left_out(admin_user):
    assert waiting_for(admin_user) == []


def test_an_account_sees_only_the_kinds_it_may_open(client, waiting):
    user = User.objects.create_user("reader", password="x", is_staff=True)
    user.user_permissions.add(
        *Permission.objects.filter(codename__in=["use_memory", "view_tagsuggestion"])
    )
    assert [kind.said for kind in waiting_for(user)] == ["2 suggestions to decide on"]


def test_the_anvils_index_leads_with_what_waits_and_folds_the_machinery(admin_client, waiting):
    page = admin_client.get(reverse("admin:index")).text
    assert page.index("Waiting for you") < page.index("Memory to curate")
    assert "2 suggestions to decide on" in page
    assert '<details class="anvil-machinery"><summary>Machinery:' in page
    folded = page.index('<details class="anvil-machinery">')
    assert folded < page.index("Access attempts") < page.index("</details>", folded)


def test_the_index_says_when_nothing_waits(admin_client):
    page = admin_client.get(reverse("admin:index")).text
    assert "Nothing waits for you" in page


@pytest.mark.parametrize(
    ("list_name", "title"),
    [
        ("admin:mirror_tagsuggestion_changelist", "Tag suggestions"),
        ("admin:gem_workingmemory_changelist", "Working memory"),
        ("admin:events_turn_changelist", "Turns"),
    ],
)
def test_a_list_is_titled_by_what_it_lists(admin_client, list_name, title):
    page = admin_client.get(reverse(list_name)).text
    assert f"<h1>{title}</h1>" in page and f"<title>{title} | " in page
    assert "to change" not in page and "to view" not in page
