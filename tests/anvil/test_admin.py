from datetime import timedelta

import psycopg.errors
import pytest
from django.contrib.admin.models import ADDITION, CHANGE, LogEntry
from django.contrib.auth.models import Permission
from django.contrib.messages import get_messages
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connections
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape

import anvil.fragments
from anvil import graph
from events.models import Event
from gem.models import (
    AmbientProse,
    Fragment,
    FragmentEdge,
    FragmentSource,
    MiraEntry,
    WakeText,
    WorkingMemory,
    WorkingMemorySource,
)
from gem.selectors import ambient_prose_current
from gem.services import working_memory_create
from gem.state import CHARS_PER_TOKEN, state_set
from tests.silentstar.test_disks import as_django_wraps, store_read_only
from tests.silentstar.test_uploads import count_kept_bytes

pytestmark = pytest.mark.django_db(databases="__all__")


@pytest.fixture
def fragments():
    made = {
        key: Fragment.objects.create(key=key, ambient=ambient, inventory=inventory)
        for key, ambient, inventory in [
            ("cottagecore", "Soft rural.", "Cream apron dress."),
            ("fairy", "White softness.", ""),
            ("ouji", "Prince style.", ""),
            ("lonely", "Nobody links here.", ""),
        ]
    }
    FragmentEdge.objects.create(source=made["cottagecore"], target=made["fairy"], relation="near")
    FragmentEdge.objects.create(source=made["ouji"], target=made["cottagecore"], relation="was")
    return made


def keys_listed(response) -> list[str]:
    return [fragment.key for fragment in response.context["cl"].result_list]


def log_messages() -> list[str]:
    return list(LogEntry.objects.order_by("pk").values_list("change_message", flat=True))


@pytest.mark.parametrize(
    "url",
    [
        "/admin/gem/fragment/graph/",
        "/admin/gem/fragment/fairy/rename/",
        "/admin/gem/fragment/fairy/fold/",
        "/admin/gem/ambientprose/diff/?new=1",
        "/admin/gem/waketext/diff/?new=1",
        "/admin/gem/fragment/draft/",
    ],
)
def test_it_sends_a_logged_out_visitor_to_sign_in(client, fragments, url):
    response = client.get(url)
    assert response.status_code == 302
    assert "login" in response.url
    assert client.post(url, {"new_key": "x", "into": "ouji", "confirm": "1"}).status_code == 302
    assert Fragment.objects.filter(key="fairy").exists()


# --- Fragments ----------------------------------------------------------------------------


def test_it_shows_token_estimates_at_the_calibrated_rate(admin_client, fragments):
    state_set(CHARS_PER_TOKEN, 2.5)
    response = admin_client.get(reverse("admin:gem_fragment_change", args=["cottagecore"]))
    page = response.content.decode()
    # "Soft rural." is 11 characters, "Cream apron dress." 18: ceil(/2.5) = 5 and 8.
    assert "ambient 5, recognition 0, inventory 8 (saved text, at 2.50" in page
    assert 'data-chars-per-token="2.500000"' in page
    assert "anvil/tokens.js" in page


def test_it_edits_edges_inline_and_logs_the_change(admin_client, admin_user, fragments):
    url = reverse("admin:gem_fragment_change", args=["fairy"])
    form = {
        "ambient": "White softness.",
        "recognition": "",
        "inventory": "Grey crewneck.",
        "edges_out-TOTAL_FORMS": "1",
        "edges_out-INITIAL_FORMS": "0",
        "edges_out-0-relation": "kin",
        "edges_out-0-target": "ouji",
        "edges_in-TOTAL_FORMS": "1",
        "edges_in-INITIAL_FORMS": "1",
        "edges_in-0-id": FragmentEdge.objects.get(target="fairy").pk,
        "edges_in-0-target": "fairy",
        "edges_in-0-source": "cottagecore",
        "edges_in-0-relation": "near",
        "sources-TOTAL_FORMS": "0",
        "sources-INITIAL_FORMS": "0",
    }
    response = admin_client.post(url, form)
    assert response.status_code == 302, response.context["errors"]
    assert Fragment.objects.get(key="fairy").inventory == "Grey crewneck."
    assert FragmentEdge.objects.filter(source="fairy", target="ouji", relation="kin").exists()
    [entry] = LogEntry.objects.filter(object_id="fairy")
    assert entry.action_flag == CHANGE
    assert "Inventory" in entry.get_change_message()
    assert "Added fragment edge “fairy —kin→ ouji”" in entry.get_change_message()


def test_it_says_in_words_that_a_fragment_cannot_link_to_itself(admin_client, fragments):
    inline = admin_client.post(
        reverse("admin:gem_fragment_change", args=["fairy"]),
        {
            "ambient": "White softness.",
            "recognition": "",
            "inventory": "",
            "edges_out-TOTAL_FORMS": "1",
            "edges_out-INITIAL_FORMS": "0",
            "edges_out-0-relation": "mirror",
            "edges_out-0-target": "fairy",
            "edges_in-TOTAL_FORMS": "0",
            "edges_in-INITIAL_FORMS": "0",
            "sources-TOTAL_FORMS": "0",
            "sources-INITIAL_FORMS": "0",
        },
    )
    added = admin_client.post(
        reverse("admin:gem_fragmentedge_add"),
        {"source": "fairy", "target": "fairy", "relation": "mirror"},
    )
    for response in (inline, added):
        assert response.status_code == 200
        page = response.content.decode()
        assert "A fragment cannot link to itself." in page
        assert "gem_edge_not_a_loop" not in page
    assert not FragmentEdge.objects.filter(source="fairy", target="fairy").exists()


@pytest.mark.parametrize(
    ("url", "form", "words"),
    [
        (
            "admin:gem_fragmentedge_add",
            {"source": "cottagecore", "target": "fairy", "relation": "again"},
            "These two fragments are already linked.",
        ),
        (
            "admin:mirror_summary_add",
            {
                "level": "L0",
                "first_event_id": "9",
                "last_event_id": "3",
                "content": "x",
                "tokens": "1",
                "suggestions-TOTAL_FORMS": "0",
                "suggestions-INITIAL_FORMS": "0",
            },
            "A summary’s first event cannot come after its last.",
        ),
    ],
)
def test_every_constraint_a_form_meets_answers_in_words(admin_client, fragments, url, form, words):
    response = admin_client.post(reverse(url), form)
    assert response.status_code == 200
    page = response.content.decode()
    assert escape(words) in page
    assert "is violated" not in page


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("inventory=yes", ["cottagecore"]),
        ("inventory=no", ["fairy", "lonely", "ouji"]),
        ("edges=none", ["lonely"]),
        ("edges=some", ["cottagecore", "fairy", "ouji"]),
        ("q=prince", ["ouji"]),
        ("q=apron", ["cottagecore"]),
    ],
)
def test_it_filters_and_searches_fragments(admin_client, fragments, query, expected):
    response = admin_client.get(f"{reverse('admin:gem_fragment_changelist')}?{query}")
    assert keys_listed(response) == expected


def test_it_filters_fragments_changed_recently(admin_client, fragments):
    Fragment.objects.filter(key="lonely").update(updated_at=timezone.now() - timedelta(days=40))
    url = reverse("admin:gem_fragment_changelist")
    [recent] = [
        f for f in admin_client.get(url).context["cl"].filter_specs if f.title == "recently changed"
    ]
    [past_week] = [
        c
        for c in recent.choices(admin_client.get(url).context["cl"])
        if c["display"] == "Past 7 days"
    ]
    response = admin_client.get(url + past_week["query_string"])
    assert keys_listed(response) == ["cottagecore", "fairy", "ouji"]


def test_it_previews_a_rename_without_changing_anything(admin_client, fragments):
    AmbientProse.objects.create(content="Luna loves [fairy].")
    response = admin_client.post(
        reverse("admin:gem_fragment_rename", args=["fairy"]), {"new_key": "fae"}
    )
    page = response.content.decode()
    assert "Renaming <strong>fairy</strong> to <strong>fae</strong>" in page
    assert "<li>1 edge(s)</li>" in page
    assert "1 mention(s) of [fairy]" in page
    assert '<input type="hidden" name="new_key" value="fae">' in page
    assert '<input type="submit" name="confirm" value="Rename" class="default">' in page
    assert f'href="{reverse("admin:gem_fragment_change", args=["fairy"])}"' in page
    assert Fragment.objects.filter(key="fairy").exists()
    assert not Fragment.objects.filter(key="fae").exists()
    assert AmbientProse.objects.count() == 1
    assert not LogEntry.objects.exists()


def test_it_renames_on_confirmation(admin_client, fragments):
    response = admin_client.post(
        reverse("admin:gem_fragment_rename", args=["fairy"]), {"new_key": "fae", "confirm": "1"}
    )
    assert response.url == reverse("admin:gem_fragment_change", args=["fae"])
    assert FragmentEdge.objects.filter(source="cottagecore", target="fae").exists()
    assert log_messages() == ["Renamed “fairy” to “fae”"]


@pytest.mark.parametrize(
    ("new_key", "reason"),
    [
        ("two words", "cannot be a key"),
        ("ouji", "already a fragment"),
        ("fairy", "already has that key"),
    ],
)
def test_it_refuses_a_bad_rename_and_says_why(admin_client, fragments, new_key, reason):
    response = admin_client.post(
        reverse("admin:gem_fragment_rename", args=["fairy"]),
        {"new_key": new_key, "confirm": "1"},
    )
    assert response.status_code == 200
    assert reason in " ".join(response.context["form"].errors["new_key"])
    assert Fragment.objects.filter(key="fairy").exists()
    assert not LogEntry.objects.exists()


def test_it_previews_a_fold_with_tier_diffs_without_changing_anything(admin_client, fragments):
    response = admin_client.post(
        reverse("admin:gem_fragment_fold", args=["ouji"]), {"into": "cottagecore"}
    )
    page = response.content.decode()
    # ouji's edge to cottagecore would point at itself: its label goes to the recognition tier
    assert [tier for tier, _ in response.context["diffs"]] == ["ambient", "recognition"]
    assert "<ins>## ouji" in page  # the folded text under its heading, in the comparison
    assert (
        "ouji → cottagecore “was” would point at itself: its label is kept in the recognition tier"
        in page
    )
    assert '<input type="hidden" name="into" value="cottagecore">' in page
    assert '<input type="submit" name="confirm" value="Fold" class="default">' in page
    assert f'href="{reverse("admin:gem_fragment_change", args=["ouji"])}"' in page
    assert Fragment.objects.get(key="cottagecore").ambient == "Soft rural."
    assert Fragment.objects.filter(key="ouji").exists()
    assert not LogEntry.objects.exists()


def test_it_folds_on_confirmation(admin_client, fragments):
    response = admin_client.post(
        reverse("admin:gem_fragment_fold", args=["ouji"]), {"into": "cottagecore", "confirm": "1"}
    )
    assert response.url == reverse("admin:gem_fragment_change", args=["cottagecore"])
    assert not Fragment.objects.filter(key="ouji").exists()
    assert (
        Fragment.objects.get(key="cottagecore").ambient == "Soft rural.\n\n## ouji\nPrince style."
    )
    assert len(log_messages()) == 2


def test_it_lists_each_edge_a_fold_merges_with_its_label_and_logs_them(admin_client):
    made = {key: Fragment.objects.create(key=key) for key in ("fairy", "moon", "loop", "wardrobe")}
    for source, target, relation in [
        ("fairy", "loop", "near"),
        ("moon", "loop", "moon-rel"),
        ("moon", "fairy", "loop-rel"),
        ("wardrobe", "fairy", ""),
        ("wardrobe", "moon", "wardrobe-moon"),
    ]:
        FragmentEdge.objects.create(source=made[source], target=made[target], relation=relation)
    url = reverse("admin:gem_fragment_fold", args=["moon"])
    merged = [
        "moon → fairy “loop-rel” would point at itself: its label is kept in the recognition tier",
        "moon → loop “moon-rel” merged into fairy → loop, labelled “near; moon-rel”",
        "wardrobe → moon “wardrobe-moon” merged into wardrobe → fairy, labelled “wardrobe-moon”",
    ]

    preview = admin_client.post(url, {"into": "fairy"}).content.decode()
    for line in merged:
        assert f'<li class="anvil-merged">{escape(line)}</li>' in preview
    assert FragmentEdge.objects.get(source="fairy", target="loop").relation == "near"

    admin_client.post(url, {"into": "fairy", "confirm": "1"})
    assert set(FragmentEdge.objects.values_list("source_id", "target_id", "relation")) == {
        ("fairy", "loop", "near; moon-rel"),
        ("wardrobe", "fairy", "wardrobe-moon"),
    }
    assert "moon → fairy: loop-rel" in Fragment.objects.get(key="fairy").recognition
    logged = LogEntry.objects.get(object_id="fairy").change_message
    assert all(line in logged for line in merged)


def test_it_refuses_to_fold_into_a_missing_fragment(admin_client, fragments):
    response = admin_client.post(
        reverse("admin:gem_fragment_fold", args=["ouji"]), {"into": "nowhere", "confirm": "1"}
    )
    assert response.context["form"].errors["into"] == ["There is no fragment “nowhere”."]
    assert Fragment.objects.filter(key="ouji").exists()


def test_it_draws_the_whole_graph_with_labelled_edges_and_links(admin_client, fragments):
    response = admin_client.get(reverse("admin:gem_fragment_graph"))
    elements = response.context["elements"]
    assert [node["data"]["id"] for node in elements["nodes"]] == [
        "cottagecore",
        "fairy",
        "lonely",
        "ouji",
    ]
    assert elements["nodes"][1]["data"]["url"] == reverse(
        "admin:gem_fragment_change", args=["fairy"]
    )
    edges = {
        (e["data"]["source"], e["data"]["target"], e["data"]["label"]) for e in elements["edges"]
    }
    assert edges == {("cottagecore", "fairy", "near"), ("ouji", "cottagecore", "was")}
    assert 'id="anvil-graph-elements"' in response.content.decode()


def test_it_draws_a_neighbourhood_when_the_graph_is_large(admin_client, fragments, monkeypatch):
    monkeypatch.setattr(graph, "WHOLE_GRAPH_LIMIT", 2)
    url = reverse("admin:gem_fragment_graph")
    assert admin_client.get(url).context["graph"] is None
    assert "name a key" in admin_client.get(url).content.decode()
    around = admin_client.get(url, {"key": "fairy", "depth": 1}).context["elements"]
    assert [node["data"]["id"] for node in around["nodes"]] == ["cottagecore", "fairy"]
    assert [node["data"]["focus"] for node in around["nodes"]] == [False, True]


def test_it_says_when_the_graph_key_is_unknown(admin_client, fragments):
    response = admin_client.get(reverse("admin:gem_fragment_graph"), {"key": "nope"})
    assert "There is no fragment “nope”." in response.content.decode()


# --- Ambient prose and wake texts ---------------------------------------------------------


def test_it_saves_every_ambient_edit_as_a_new_version_and_checks_its_keys(admin_client, fragments):
    AmbientProse.objects.create(content="Luna loves [fairy].")
    add = reverse("admin:gem_ambientprose_add")
    form = admin_client.get(add)
    assert form.context["adminform"].form.initial["content"] == "Luna loves [fairy]."
    assert form.context["check"].unmentioned == ["cottagecore", "lonely", "ouji"]

    response = admin_client.post(add, {"content": "Luna loves [fairy] and [tea]."}, follow=True)

    assert list(AmbientProse.objects.order_by("pk").values_list("content", flat=True)) == [
        "Luna loves [fairy].",
        "Luna loves [fairy] and [tea].",
    ]
    shown = [str(message) for message in response.context["messages"]]
    assert any("Named without a fragment: [tea]" in message for message in shown)
    [entry] = LogEntry.objects.all()
    assert entry.action_flag == ADDITION
    assert entry.change_message == "New version: 1 line(s) added, 1 removed"


def test_it_keeps_ambient_versions_unchanged_and_saves_a_versions_page_as_a_new_one(
    admin_client,
):
    version = AmbientProse.objects.create(content="first")
    url = reverse("admin:gem_ambientprose_change", args=[version.pk])
    assert admin_client.post(url, {"content": "second, from the first"}).status_code == 302
    admin_client.post(reverse("admin:gem_ambientprose_delete", args=[version.pk]), {"post": "yes"})
    version.refresh_from_db()
    assert version.content == "first"
    assert ambient_prose_current() == "second, from the first"
    newest = AmbientProse.objects.order_by("-pk").first()
    assert newest.pk != version.pk and newest.author.get_username() == "admin"


def test_it_compares_any_two_versions(admin_client):
    first = AmbientProse.objects.create(content="one\ntwo <b>")
    AmbientProse.objects.create(content="middle")
    last = AmbientProse.objects.create(content="one\nthree")
    url = reverse("admin:gem_ambientprose_diff")
    response = admin_client.get(url, {"old": first.pk, "new": last.pk})
    page = response.content.decode()
    assert response.context["summary"] == "1 line(s) added, 1 removed"
    assert "<del>two &lt;b&gt;</del>" in page  # escaped, the words that went marked
    assert "<ins>three</ins>" in page


def test_it_compares_a_version_with_the_one_it_replaced(admin_client):
    AmbientProse.objects.create(content="one")
    second = AmbientProse.objects.create(content="two")
    response = admin_client.get(reverse("admin:gem_ambientprose_diff"), {"new": second.pk})
    assert response.context["old"].content == "one"


def test_it_compares_two_versions_selected_in_the_list(admin_client):
    first = AmbientProse.objects.create(content="one")
    second = AmbientProse.objects.create(content="two")
    response = admin_client.post(
        reverse("admin:gem_ambientprose_changelist"),
        {"action": "versions_compare", "_selected_action": [second.pk, first.pk]},
    )
    assert (
        response.url == f"{reverse('admin:gem_ambientprose_diff')}?old={first.pk}&new={second.pk}"
    )


def test_it_says_how_to_ask_for_a_comparison(admin_client):
    response = admin_client.get(reverse("admin:gem_ambientprose_diff"), {"new": "x"}, follow=True)
    [message] = response.context["messages"]
    assert "Say which versions to compare" in str(message)


def test_it_versions_each_wake_text_on_its_own(admin_client):
    wake_before = WakeText.objects.filter(kind="wake").count()
    image = WakeText.objects.create(kind="image", content="An image: describe it.")
    form = admin_client.get(reverse("admin:gem_waketext_add"), {"kind": "image"})
    assert form.context["adminform"].form.initial["content"] == "An image: describe it."
    admin_client.post(
        reverse("admin:gem_waketext_add"), {"kind": "image", "content": "An image: look closely."}
    )
    newest = WakeText.objects.filter(kind="image").order_by("-pk").first()
    assert newest.content == "An image: look closely."
    assert WakeText.objects.filter(kind="wake").count() == wake_before
    response = admin_client.get(reverse("admin:gem_waketext_diff"), {"new": newest.pk})
    assert response.context["old"] == image


# --- Working memory -----------------------------------------------------------------------


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
    assert "Change the status of 1 item(s)" in asked.content.decode()
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
        assert f"{event.ts:%Y-%m-%d %H:%M} {event.actor}" in page
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


# --- Lens drafts --------------------------------------------------------------------------

DRAFT = """# fairy

## inventory

A grey crewneck, soft.

## edges

- → ouji: kin
- ← cottagecore: near

# moon

## ambient

Round and patient.
"""


def gem_state() -> tuple:
    return (
        list(Fragment.objects.values_list("key", "ambient", "recognition", "inventory")),
        sorted(FragmentEdge.objects.values_list("source_id", "target_id", "relation")),
        LogEntry.objects.count(),
    )


def test_it_previews_a_pasted_draft_per_fragment_tier_and_edge(admin_client, fragments):
    before = gem_state()
    response = admin_client.post(reverse("admin:gem_fragment_draft"), {"text": DRAFT})
    page = response.content.decode()
    assert [(f["key"], f["created"]) for f in response.context["fragments"]] == [
        ("moon", True),
        ("fairy", False),
        ("ouji", False),
    ]
    fairy = response.context["fragments"][1]
    assert [tier for tier, _ in fairy["tiers"]] == ["inventory"]
    assert "<ins>A grey crewneck, soft.</ins>" in page
    assert "added: fairy → ouji (kin)" in page
    assert 'name="confirm"' in page
    assert gem_state() == before


def test_it_records_a_drafts_sources_and_shows_them_on_the_fragment(admin_client, fragments):
    said = Event.objects.create(content="The fairy lives in the well.", actor="luna")
    url = reverse("admin:gem_fragment_draft")
    draft = f"# fairy\n\n## sources\n\n- events {said.pk}\n"

    preview = admin_client.post(url, {"text": draft})
    assert f"sources recorded: events {said.pk}" in preview.content.decode()
    response = admin_client.post(url, {"text": draft, "confirm": "1"})

    [message] = get_messages(response.wsgi_request)
    assert "1 source(s) recorded" in str(message)
    assert list(FragmentSource.objects.values_list("fragment_id", "event_id")) == [
        ("fairy", said.pk)
    ]
    page = admin_client.get(reverse("admin:gem_fragment_change", args=["fairy"])).content
    assert f"{said.ts:%Y-%m-%d %H:%M} luna</span> The fairy lives in the well." in page.decode()


def test_it_refuses_a_draft_source_that_is_not_an_event(admin_client, fragments):
    response = admin_client.post(
        reverse("admin:gem_fragment_draft"),
        {"text": "# fairy\n\n## sources\n\n- events 404\n", "confirm": "1"},
    )

    assert response.context["form"].non_field_errors() == [
        "line 5: event 404 is not in the event log: a source must be an event "
        "(see the Lens or the events' admin page)"
    ]
    assert not FragmentSource.objects.exists()


def test_it_applies_an_uploaded_draft_on_confirmation(admin_client, fragments):
    url = reverse("admin:gem_fragment_draft")
    preview = admin_client.post(
        url, {"upload": SimpleUploadedFile("fairy.md", DRAFT.encode(), "text/markdown")}
    )
    carried = preview.context["text"]
    response = admin_client.post(url, {"text": carried.replace("\n", "\r\n"), "confirm": "1"})

    assert response.url == reverse("admin:gem_fragment_changelist")
    assert Fragment.objects.get(key="fairy").inventory == "A grey crewneck, soft."
    assert Fragment.objects.get(key="moon").ambient == "Round and patient."
    assert FragmentEdge.objects.filter(source="fairy", target="ouji", relation="kin").exists()
    assert set(LogEntry.objects.values_list("object_id", flat=True)) == {"fairy", "moon", "ouji"}


@pytest.mark.parametrize(
    ("form", "error"),
    [
        ({"text": "# fairy\n\n## colour\n\nblue\n"}, "line 3"),
        ({"text": "# fairy\n\n## edges\n\n- → nowhere\n"}, "nowhere"),
        ({"text": "   "}, "The draft is empty."),
    ],
)
def test_it_refuses_a_bad_draft_and_changes_nothing(admin_client, fragments, form, error):
    before = gem_state()
    for confirm in ({}, {"confirm": "1"}):
        response = admin_client.post(reverse("admin:gem_fragment_draft"), {**form, **confirm})
        assert response.status_code == 200
        assert error in " ".join(response.context["form"].non_field_errors())
    assert gem_state() == before


def test_it_refuses_an_upload_that_is_not_a_text_draft(admin_client):
    url = reverse("admin:gem_fragment_draft")
    picture = admin_client.post(url, {"upload": SimpleUploadedFile("a.png", b"\x89PNG")})
    assert "is not a draft" in " ".join(picture.context["form"].non_field_errors())
    latin = admin_client.post(
        url, {"upload": SimpleUploadedFile("a.md", "# caf\xe9".encode("latin-1"))}
    )
    assert "not UTF-8 text (byte 5)" in " ".join(latin.context["form"].non_field_errors())


def test_it_refuses_an_uploaded_draft_over_its_limit_keeping_no_more_than_the_limit(
    admin_client, fragments, monkeypatch, settings
):
    assert settings.DRAFT_MAX_BYTES == 2 * 2**20  # the default
    kept_bytes = count_kept_bytes(monkeypatch)
    before = gem_state()
    big = DRAFT.encode() + b"A" * (3 * 2**20)
    response = admin_client.post(
        reverse("admin:gem_fragment_draft"), {"upload": SimpleUploadedFile("big.md", big)}
    )
    assert response.status_code == 200
    errors = " ".join(response.context["form"].non_field_errors())
    assert f"“big.md” is {len(big) / 2**20:.2f} MB; drafts may be at most 2.00 MB." in errors
    assert sum(kept_bytes) <= settings.DRAFT_MAX_BYTES
    assert gem_state() == before


def test_it_refuses_a_pasted_draft_over_its_limit(admin_client, fragments, settings):
    settings.DRAFT_MAX_BYTES = 100
    response = admin_client.post(reverse("admin:gem_fragment_draft"), {"text": DRAFT})
    errors = " ".join(response.context["form"].non_field_errors())
    assert f"The draft is {len(DRAFT.encode())} bytes; drafts may be at most 100 bytes." in errors


def test_it_says_when_a_draft_changes_nothing(admin_client, fragments):
    response = admin_client.post(
        reverse("admin:gem_fragment_draft"), {"text": "# ouji\n\n## ambient\n\nPrince style.\n"}
    )
    assert "Nothing would change" in response.content.decode()


def test_it_lets_a_reader_look_but_not_reshape_or_change_status(
    client, django_user_model, fragments
):
    reader = django_user_model.objects.create_user("reader", password="x", is_staff=True)
    reader.user_permissions.set(
        Permission.objects.filter(
            codename__in=["use_memory", "view_fragment", "view_workingmemory"]
        )
    )
    client.force_login(reader)
    assert client.get(reverse("admin:gem_fragment_graph")).status_code == 200
    rename = reverse("admin:gem_fragment_rename", args=["fairy"])
    assert client.post(rename, {"new_key": "fae", "confirm": "1"}).status_code == 403
    assert client.get(reverse("admin:gem_fragment_draft")).status_code == 403
    item = WorkingMemory.objects.create(type="pin", content="tea")
    listed = client.get(reverse("admin:gem_workingmemory_changelist"))
    assert "status_change" not in listed.content.decode()
    client.post(
        reverse("admin:gem_workingmemory_changelist"),
        {
            "action": "status_change",
            "_selected_action": [item.pk],
            "apply": "1",
            "status": "dropped",
            "reason": "no",
        },
    )
    assert WorkingMemory.objects.get().status == "active"
    assert Fragment.objects.filter(key="fairy").exists()


def test_it_lists_working_memory_with_nothing_active(admin_client):
    WorkingMemory.objects.create(type="thought", content="done", status="resolved")
    url = reverse("admin:gem_workingmemory_changelist")
    column = admin_client.get(url).context["cl"].list_display.index("live_score")
    response = admin_client.get(url, {"o": f"-{column}"})
    assert [item.live_score for item in response.context["cl"].result_list] == [None]
    assert '<td class="field-live_score">—</td>' in response.content.decode()


def test_it_offers_a_new_version_of_each_wake_text(admin_client):
    page = admin_client.get(reverse("admin:gem_waketext_changelist")).content.decode()
    add = reverse("admin:gem_waketext_add")
    assert f'href="{add}?kind=wake"' in page
    assert f'href="{add}?kind=image"' in page


def test_it_changes_one_items_status_from_its_page(admin_client):
    item = WorkingMemory.objects.create(type="plan", content="buy tea")
    change = reverse("admin:gem_workingmemory_change", args=[item.pk])
    status = reverse("admin:gem_workingmemory_status", args=[item.pk])
    assert status in admin_client.get(change).content.decode()
    assert "Change the status of 1 item(s)" in admin_client.get(status).content.decode()

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


# --- A full disk or read-only data ----------------------------------------------------------------


def test_it_says_read_only_data_in_words_and_renames_nothing(admin_client, fragments):
    with store_read_only("default", table="gem_fragment"):
        response = admin_client.post(
            reverse("admin:gem_fragment_rename", args=["fairy"]),
            {"new_key": "fae", "confirm": "1"},
        )
    assert response.status_code == 503
    assert (
        '<p class="error" role="alert" data-disk-trouble>Not done: Silentstar&#x27;s data is '
        "read-only, so nothing can be written. Make the data folder (or the database) writable "
        "and try again.</p>"
    ) in response.content.decode()
    assert Fragment.objects.filter(key="fairy").exists()
    assert not Fragment.objects.filter(key="fae").exists() and not LogEntry.objects.exists()


def test_it_says_postgresqls_disk_full_in_words(admin_client, fragments, monkeypatch):
    def full(**kwargs):
        raise as_django_wraps(psycopg.errors.DiskFull("could not extend file"))

    monkeypatch.setattr(anvil.fragments, "fragment_rename", full)
    response = admin_client.post(
        reverse("admin:gem_fragment_rename", args=["fairy"]), {"new_key": "fae", "confirm": "1"}
    )
    assert response.status_code == 507
    assert "<title>Silentstar — the disk is full</title>" in response.content.decode()
    assert (
        "Not done: the disk holding Silentstar&#x27;s data is full. Free some space and try again."
    ) in response.content.decode()
    assert not Fragment.objects.filter(key="fae").exists()
