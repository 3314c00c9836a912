"""The Anvil in a real browser: editing a fragment and its edges, the graph picture, the
suggestion queue, the reshaping and draft previews.

Each test clicks and types as a person would; screenshots go to ``test-artifacts/``.
"""

import re

import pytest
from django.contrib import admin
from django.urls import NoReverseMatch, reverse
from playwright.sync_api import BrowserContext, Page, expect

from events.models import Event
from gem.models import AmbientProse, Fragment, FragmentEdge, WorkingMemory
from mirror.models import Summary, TagSuggestion
from tests.browser.conftest import BROWSER_DB

pytestmark = BROWSER_DB


@pytest.fixture
def admin_page(context: BrowserContext, owner, signed_in) -> Page:
    """Signed in as the owner, who curates: the admin's index open."""
    owner.is_staff = owner.is_superuser = True
    owner.save(update_fields=["is_staff", "is_superuser"])
    page = signed_in(context).new_page()
    page.goto("/admin/")
    expect(page.get_by_role("heading", name="Curation")).to_be_visible()
    return page


@pytest.fixture
def wardrobe() -> dict[str, Fragment]:
    made = {
        key: Fragment.objects.create(key=key, ambient=ambient)
        for key, ambient in [
            ("fairy", "White softness, a small light."),
            ("ouji", "Prince style."),
            ("cottagecore", "Soft rural."),
        ]
    }
    FragmentEdge.objects.create(source=made["cottagecore"], target=made["fairy"], relation="near")
    return made


def select2_choose(page: Page, row: str, text: str) -> None:
    """Pick ``text`` in the admin's autocomplete widget of the inline row ``row``."""
    page.locator(f"#{row} .select2-selection").click()
    page.locator(".select2-search__field").fill(text)
    page.locator(".select2-results__option", has_text=text).first.click()


def test_it_edits_an_inventory_adds_an_edge_and_shows_it_in_the_graph(
    admin_page: Page, wardrobe, screenshot
):
    page = admin_page
    page.goto("/admin/gem/fragment/fairy/change/")
    counter = page.locator("#anvil-tokens-inventory")
    expect(counter).to_have_text("≈ 0 tokens")
    page.locator("#id_inventory").fill("A grey crewneck, soft as a cloud.")  # 33 characters
    expect(counter).to_have_text("≈ 9 tokens")
    page.get_by_role("button", name=re.compile("add another edge to", re.I)).click()
    page.locator("#id_edges_out-0-relation").fill("kin")
    select2_choose(page, "edges_out-0", "ouji")
    page.locator("#id_inventory").scroll_into_view_if_needed()
    screenshot(page, "fragment-desktop")
    page.get_by_role("button", name="Save", exact=True).click()

    expect(page.locator(".messagelist")).to_contain_text("was changed successfully")
    assert Fragment.objects.get(key="fairy").inventory == "A grey crewneck, soft as a cloud."
    assert FragmentEdge.objects.filter(source="fairy", target="ouji", relation="kin").exists()

    page.goto("/admin/gem/fragment/fairy/change/")
    page.get_by_role("link", name="Graph around").click()
    expect(page.locator("#anvil-graph[data-ready=true]")).to_be_attached()
    edges = page.evaluate(
        "() => anvilGraph.edges().map(e => [e.data('source'), e.data('target'), e.data('label')])"
    )
    assert sorted(edges) == [["cottagecore", "fairy", "near"], ["fairy", "ouji", "kin"]]
    screenshot(page, "graph-desktop")

    # Clicking a fragment in the picture opens its page.
    spot = page.evaluate(
        "() => { const p = anvilGraph.getElementById('ouji').renderedPosition();"
        " const box = document.getElementById('anvil-graph').getBoundingClientRect();"
        " return [box.left + p.x, box.top + p.y]; }"
    )
    page.mouse.click(*spot)
    expect(page).to_have_url(re.compile(r"/admin/gem/fragment/ouji/change/$"))


def test_it_promotes_a_suggestion_and_finds_it_in_working_memory(admin_page: Page, screenshot):
    first = Event.objects.create(content="I only drink tea without sugar", actor="luna")
    last = Event.objects.create(content="Noted: no sugar, ever.", actor="claude")
    summary = Summary.objects.create(
        level="L0",
        first_event_id=first.pk,
        last_event_id=last.pk,
        content="Luna was particular about tea, warmly.",
    )
    pin = TagSuggestion.objects.create(summary=summary, type="pin", content="tea, no sugar")
    TagSuggestion.objects.create(summary=summary, type="thought", content="she likes rituals")
    page = admin_page

    page.goto(f"/admin/mirror/tagsuggestion/{pin.pk}/change/")
    expect(page.get_by_text("I only drink tea without sugar")).to_be_visible()
    page.locator("#id_subject").fill("tea")
    screenshot(page, "suggestion-desktop")
    page.get_by_role("button", name="Save and promote").click()
    expect(page.locator(".messagelist")).to_contain_text(f"Promoted 1: {pin.pk} → working memory")
    screenshot(page, "queue-desktop")

    page.goto("/admin/gem/workingmemory/")
    row = page.locator("#result_list tbody tr", has_text="tea, no sugar")
    expect(row).to_contain_text("Pin")
    expect(row).to_contain_text("mirror")
    screenshot(page, "working-memory-desktop")
    row.locator("th a").click()
    sources = page.locator(".field-source_event_list")
    expect(sources).to_contain_text(f"#{first.pk}")
    expect(sources).to_contain_text("I only drink tea without sugar")
    expect(sources).not_to_contain_text("Noted: no sugar, ever.")  # the companion's reply
    page.get_by_role("link", name=f"Mirror suggestion {pin.pk}").click()
    expect(page).to_have_url(re.compile(rf"/admin/mirror/tagsuggestion/{pin.pk}/change/$"))
    expect(page.get_by_text("cannot be acted on again")).to_be_visible()
    item = WorkingMemory.objects.get()
    assert (item.subject, item.suggestion_id) == ("tea", pin.pk)


def test_it_previews_a_fold_and_a_draft_before_writing(admin_page: Page, wardrobe, screenshot):
    AmbientProse.objects.create(content="Luna loves [fairy] and [ouji].\n[tea] is missing.")
    page = admin_page

    page.goto("/admin/gem/fragment/ouji/change/")
    page.get_by_role("link", name="Fold into…").click()
    page.get_by_label("Fold into").fill("fairy")
    page.get_by_role("button", name="Preview").click()
    expect(page.locator(".anvil-diff .anvil-worddiff").first).to_contain_text("## ouji")
    screenshot(page, "fold-desktop")
    assert Fragment.objects.filter(key="ouji").exists()

    page.goto("/admin/gem/fragment/draft/")
    page.get_by_label("Paste a draft").fill(
        "# fairy\n\n## recognition\n\nShe came with the first snow.\n\n"
        "## edges\n\n- ← cottagecore: near\n- → ouji: kin\n"
    )
    page.get_by_role("button", name="Preview").click()
    expect(page.locator(".anvil-edges")).to_contain_text("added: fairy → ouji (kin)")
    screenshot(page, "draft-desktop")
    page.get_by_role("button", name="Apply the draft").click()
    expect(page.locator(".messagelist")).to_contain_text("Applied the draft")
    assert Fragment.objects.get(key="fairy").recognition == "She came with the first snow."

    page.goto("/admin/gem/ambientprose/add/")
    expect(page.locator(".anvil-check")).to_contain_text("[tea]")
    screenshot(page, "ambient-desktop")


def test_every_admin_list_and_add_form_fits_the_content_security_policy(admin_page: Page, wardrobe):
    """The admin's own pages (lists with their actions and filters, add forms with their
    widgets, also as a popup) run with nothing refused: the autouse recorder checks."""
    page = admin_page
    for model in admin.site._registry:
        name = f"admin:{model._meta.app_label}_{model._meta.model_name}"
        page.goto(reverse(f"{name}_changelist"))
        expect(page.locator("#content")).to_be_visible()
        try:
            add = reverse(f"{name}_add")
        except NoReverseMatch:
            continue
        for url in (add, f"{add}?_popup=1"):
            if page.goto(url).status == 200:
                expect(page.locator("#content")).to_be_visible()


def test_it_reviews_the_cilantro_pair_side_by_side_and_keeps_both(admin_page: Page, screenshot):
    page = admin_page
    for content in ("no cilantro in recipes", "no cilantro in ANY recipe suggestions!"):
        page.goto("/admin/gem/workingmemory/add/")
        page.locator("#id_type").select_option("pin")
        page.locator("#id_content").fill(content)
        page.locator("#id_importance").fill("0.8" if "ANY" in content else "")
        page.get_by_role("button", name="Save", exact=True).click()
        expect(page.locator(".messagelist")).to_contain_text("was added successfully")
    first, near = WorkingMemory.objects.order_by("pk")

    page.goto("/admin/gem/workingmemory/")
    page.get_by_role("link", name="near duplicates to review").click()
    expect(page.locator("#result_list tbody tr")).to_have_count(1)
    page.locator("#result_list tbody tr th a").click()
    panel = page.locator(".anvil-twins")
    expect(panel.locator(".anvil-twin-item")).to_have_count(2)
    expect(panel).to_contain_text("no cilantro in recipes")
    screenshot(page, "near-duplicate-desktop")
    panel.get_by_role("button", name="Keep both").click()

    expect(page.locator(".messagelist")).to_contain_text(
        f"Kept beside its near duplicate #{first.pk}"
    )
    expect(page.locator(".anvil-twins")).to_have_count(0)
    near.refresh_from_db()
    assert (near.near_duplicate_of, near.importance, near.importance_edited) == (None, 0.8, True)
