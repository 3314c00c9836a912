"""Fragments in the Anvil (``anvil.fragments``): the tiers with their inlines, the list's filters,
renaming and folding, the graph picture, a Lens draft applied after its preview, and a full or
read-only disk said in words."""

from datetime import timedelta

import psycopg.errors
import pytest
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.messages import get_messages
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connections
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape

import anvil.fragments
from anvil import graph
from events.models import Event
from gem.draft import DraftDiff
from gem.drafts import diff_write
from gem.keys import CASE_TWINS
from gem.models import AmbientProse, Fragment, FragmentEdge, FragmentSource
from gem.state import CHARS_PER_TOKEN, state_get, state_set
from lens.extract import fragment_markdown
from silentstar.words import moment_said
from tests.anvil.conftest import log_messages
from tests.silentstar.test_disks import as_django_wraps, store_read_only
from tests.silentstar.test_uploads import count_kept_bytes

pytestmark = pytest.mark.django_db(databases="__all__")


def keys_listed(response) -> list[str]:
    return [fragment.key for fragment in response.context["cl"].result_list]


@pytest.mark.parametrize("url", ["admin:gem_fragment_add", "admin:gem_fragment_change"])
def test_it_gives_the_live_count_the_calibrated_rate_the_budget_and_the_cap_once(
    admin_client, fragments, settings, url
):
    state_set(CHARS_PER_TOKEN, 2.5)
    settings.BUDGET_RECALL, settings.FRAGMENT_TIER_MAX_TOKENS = 900, 3000
    args = ["cottagecore"] if url.endswith("change") else []
    page = admin_client.get(reverse(url, args=args)).content.decode()
    assert 'data-chars-per-token="2.500000" data-budget="900" data-cap="3000"' in page
    assert page.count("anvil/tokens.js") == 1 and "saved text" not in page


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
    assert "<li>1 edge</li>" in page
    assert "1 mention of [fairy]" in page
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
    assert f">#{said.pk}</a>" in preview.content.decode().split("sources recorded:")[1]
    response = admin_client.post(url, {"text": draft, "confirm": "1"})

    [message] = get_messages(response.wsgi_request)
    assert "1 source recorded" in str(message)
    assert list(FragmentSource.objects.values_list("fragment_id", "event_id")) == [
        ("fairy", said.pk)
    ]
    page = admin_client.get(reverse("admin:gem_fragment_change", args=["fairy"])).content
    assert f"{moment_said(said.ts)} luna</span> The fairy lives in the well." in page.decode()


def test_a_drafts_preview_reads_the_sources_of_all_its_fragments_in_one_query(
    admin_client, fragments, django_assert_num_queries
):
    said = Event.objects.create(content="The fairy lives in the well.", actor="luna")
    again = Event.objects.create(content="The well is deep.", actor="luna")
    draft = (
        f"# fairy\n\n## sources\n\n- events {said.pk}\n\n"
        f"# ouji\n\n## sources\n\n- events {again.pk}\n\n"
        f"# moon\n\n## sources\n\n- events {said.pk}, {again.pk}\n"
    )

    # One query to check the sources are events, one to show them.
    with django_assert_num_queries(2, connection=connections["events"]):
        preview = admin_client.post(reverse("admin:gem_fragment_draft"), {"text": draft})

    shown = preview.content.decode().split("sources recorded:")[1:]
    assert [[f">#{event.pk}</a>" in part for event in (said, again)] for part in shown] == [
        [True, True],  # moon, new: the fragments created come first
        [True, False],
        [False, True],
    ]


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


def test_a_lens_draft_over_a_fragment_changed_since_shows_both_changes_and_is_refused(
    admin_client, fragments
):
    url = reverse("admin:gem_fragment_draft")
    text = fragment_markdown("fairy").replace("White softness.", "White softness, lace.")
    Fragment.objects.filter(key="fairy").update(ambient="White softness, ribbons.")
    FragmentEdge.objects.create(source_id="fairy", target_id="lonely", relation="visits")
    preview = admin_client.post(url, {"text": text})
    page = preview.text
    assert "“fairy” changed since this draft was written" in page
    assert "conflict: the draft would overwrite what changed meanwhile" in page
    assert "What the draft changes" in page and "What changed meanwhile" in page
    assert [row["part"] for row in preview.context["moved"][0]["parts"] if row["conflict"]] == [
        "ambient",
        "edges",
    ]
    assert "Today's text" in page and "visits" in preview.context["today"]
    assert 'value="Apply the draft"' not in page
    before = gem_state()
    refused = admin_client.post(url, {"text": text, "confirm": "1"})
    assert refused.context["conflicts"] and "changed since this draft was written" in refused.text
    assert gem_state() == before

    rebased = admin_client.post(url, {"text": text, "rebase": "1"})
    assert not rebased.context["moved"] and 'value="Apply the draft"' in rebased.text
    admin_client.post(url, {"text": rebased.context["text"], "confirm": "1"})
    fairy = Fragment.objects.get(key="fairy")
    assert fairy.ambient == "White softness, lace."
    assert not FragmentEdge.objects.filter(target_id="lonely").exists()  # as the person saved it


def test_a_lens_draft_is_applied_part_by_part_on_its_page(admin_client, fragments):
    url = reverse("admin:gem_fragment_draft")
    text = fragment_markdown("fairy").replace("White softness.", "Lace.")
    text = text.replace("## inventory\n", "## inventory\n\nA veil.\n")
    Fragment.objects.filter(key="fairy").update(ambient="Ribbons.")
    preview = admin_client.post(url, {"text": text})
    choices = {c["name"]: c["conflict"] for c in preview.context["choices"]}
    assert choices == {"fairy:ambient": True, "fairy:inventory": False}
    assert 'name="part" value="fairy:ambient" disabled' in preview.text
    admin_client.post(
        url, {"text": text, "confirm": "1", "by_parts": "1", "part": "fairy:inventory"}
    )
    fairy = Fragment.objects.get(key="fairy")
    assert (fairy.ambient, fairy.inventory) == ("Ribbons.", "A veil.")


def test_a_draft_without_a_base_is_applied_with_a_note_that_it_was_not_checked(
    admin_client, fragments
):
    url = reverse("admin:gem_fragment_draft")
    text = "# fairy\n\n## ambient\n\nLace.\n"
    preview = admin_client.post(url, {"text": text})
    assert "does not say what it was written against for fairy" in preview.text
    response = admin_client.post(url, {"text": text, "confirm": "1"})
    (message,) = get_messages(response.wsgi_request)
    assert "could not be checked against changes made since" in str(message)
    assert Fragment.objects.get(key="fairy").ambient == "Lace."


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


# --- Triggers, reach, case twins and tier sizes ---------------------------------------------


def add_form(**fields) -> dict:
    return {
        "key": "",
        "ambient": "",
        "recognition": "",
        "inventory": "",
        "triggers": "",
        "edges_out-TOTAL_FORMS": "0",
        "edges_out-INITIAL_FORMS": "0",
        "edges_in-TOTAL_FORMS": "0",
        "edges_in-INITIAL_FORMS": "0",
        "sources-TOTAL_FORMS": "0",
        "sources-INITIAL_FORMS": "0",
        **fields,
    }


def test_it_writes_triggers_one_a_line_and_lists_them(admin_client, admin_user):
    response = admin_client.post(
        reverse("admin:gem_fragment_add"),
        add_form(
            key="lighthouse", ambient="A white tower.", triggers="the white tower\n\n Old Grey \n"
        ),
    )

    assert response.status_code == 302
    lighthouse = Fragment.objects.get()
    assert (lighthouse.triggers, lighthouse.key_folded) == (
        ["the white tower", "Old Grey"],
        "lighthouse",
    )
    listed = admin_client.get(reverse("admin:gem_fragment_changelist")).content.decode()
    assert "the white tower, Old Grey" in listed
    page = admin_client.get(reverse("admin:gem_fragment_change", args=["lighthouse"]))
    assert "the white tower\nOld Grey</textarea>" in page.content.decode()

    changed = admin_client.post(
        reverse("admin:gem_fragment_change", args=["lighthouse"]),
        add_form(ambient="A white tower.", triggers="Old Grey"),
    )

    assert changed.status_code == 302
    assert Fragment.objects.get().triggers == ["Old Grey"]
    assert log_messages()[-1] == '[{"changed": {"fields": ["triggers"]}}]'


def test_it_refuses_triggers_a_twin_key_and_a_tier_past_the_cap_in_words(admin_client, settings):
    settings.FRAGMENT_TIER_MAX_TOKENS = 4000
    diff_write(DraftDiff(fragments_created=["biscuit"]))

    response = admin_client.post(
        reverse("admin:gem_fragment_add"),
        add_form(key="Biscuit", inventory="x" * 100_000, triggers="sea\nSEA"),
    )

    errors = response.context["adminform"].form.errors
    assert errors["key"] == ["“Biscuit” is already a fragment, as “biscuit”."]
    assert errors["triggers"] == ["The triggers “sea” and “SEA” are the same words."]
    assert errors["inventory"][0].startswith("The inventory of “Biscuit” is about 25,000 tokens")
    assert list(Fragment.objects.values_list("key", flat=True)) == ["biscuit"]


def test_it_lists_and_flags_fragments_only_their_exact_key_reaches(admin_client, fragments):
    AmbientProse.objects.create(content="She dresses [cottagecore].")
    Fragment.objects.filter(key="ouji").update(triggers=["prince"])
    url = reverse("admin:gem_fragment_changelist")

    assert keys_listed(admin_client.get(url, {"reached": "key"})) == ["fairy", "lonely"]
    flagged = admin_client.get(reverse("admin:gem_fragment_change", args=["fairy"]))
    assert (
        flagged.context["only_by_key"] and "Only its exact key reaches" in flagged.content.decode()
    )
    for key in ("cottagecore", "ouji"):
        page = admin_client.get(reverse("admin:gem_fragment_change", args=[key]))
        assert not page.context["only_by_key"]


def test_it_adds_a_trigger_through_the_gems_write(admin_client, fragments):
    url = reverse("admin:gem_fragment_trigger_add", args=["fairy"])

    response = admin_client.post(url, {"trigger": "  white softness "})
    again = admin_client.post(url, {"trigger": "White Softness"}, follow=True)

    assert response.status_code == 302
    assert Fragment.objects.get(key="fairy").triggers == ["white softness"]
    assert "are the same words" in [str(m) for m in get_messages(again.wsgi_request)][-1]
    assert log_messages()[-1] == "Added the trigger “white softness”"
    assert admin_client.get(url).status_code == 405


def test_it_lists_case_twins_to_fold_while_both_are_here(admin_client, fragments):
    diff_write(DraftDiff(fragments_created=["Fairy-2"]))
    state_set(CASE_TWINS, [{"kept": "fairy", "renamed": "Fairy-2", "was": "Fairy"}])
    url = reverse("admin:gem_fragment_changelist")

    listed = admin_client.get(url)
    page = listed.content.decode()
    fold = reverse("admin:gem_fragment_fold", args=["Fairy-2"]) + "?into=fairy"
    assert "Case twins to fold" in page and escape(fold) in page
    assert keys_listed(admin_client.get(url, {"twins": "fold"})) == ["Fairy-2", "fairy"]
    assert admin_client.get(fold).context["form"]["into"].value() == "fairy"

    Fragment.objects.filter(key="Fairy-2").delete()
    assert "Case twins to fold" not in admin_client.get(url).content.decode()
    assert state_get(CASE_TWINS)  # the record stays; the pair is no longer shown


def test_forgetting_a_fragment_the_ambient_prose_names_says_so(admin_client):
    Fragment.objects.create(key="lighthouse", recognition="The white tower.")
    Fragment.objects.create(key="harbour", recognition="Boats.")
    AmbientProse.objects.create(content="She remembers the [lighthouse] and the sea.")

    done = admin_client.post(
        reverse("admin:gem_fragment_changelist"),
        {
            "action": "delete_selected",
            "_selected_action": ["lighthouse", "harbour"],
            "post": "yes",
        },
        follow=True,
    )

    assert not Fragment.objects.exists()
    said = [str(message) for message in get_messages(done.wsgi_request)]
    assert any(
        "The ambient prose still names [lighthouse]: edit it" in message for message in said
    ), said
    assert not any("[harbour]" in message for message in said)


def test_a_key_another_fragment_has_is_refused_in_words(admin_client, fragments):
    response = admin_client.post(
        reverse("admin:gem_fragment_add"), add_form(key="fairy", ambient="Another fairy.")
    )
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["key"] == [
        "Another fragment has this key: choose another, or edit that one."
    ]
    assert Fragment.objects.get(key="fairy").ambient == "White softness."


def test_the_edge_rows_are_added_in_words(admin_client, fragments):
    page = admin_client.get(reverse("admin:gem_fragment_change", args=["fairy"])).text
    assert "Add another Edge to a fragment" in page
    assert "Add another Edge from a fragment" in page
