"""The Anvil in a real browser: editing a fragment and its edges, the graph picture, the
suggestion queue, the reshaping and draft previews.

Each test clicks and types as a person would; screenshots go to ``test-artifacts/``.
"""

import re
from datetime import timedelta

import pytest
from axe_playwright_python.sync_playwright import Axe
from django.contrib import admin
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from playwright.sync_api import BrowserContext, Page, expect

from events.models import Event, Turn
from gem.models import AmbientProse, Fragment, FragmentEdge, WakeText, WorkingMemory
from gem.state import TURN_COUNTER, state_set
from mirror.models import Summary, TagSuggestion
from mirror.run import mirror_run
from tests.browser.conftest import (
    AXE_OPTIONS,
    BROWSER_DB,
    DESKTOP,
    PHONE,
    accessibility_problems,
)

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
    expect(counter).to_have_text("≈ 0 tokens of the 1,000-token recall budget")
    page.locator("#id_inventory").fill("A grey crewneck, soft as a cloud.")  # 33 characters
    expect(counter).to_have_text("≈ 9 tokens of the 1,000-token recall budget")
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
    expect(page.locator(".messagelist")).to_contain_text("Promoted into working memory: “")
    screenshot(page, "queue-desktop")

    page.goto("/admin/gem/workingmemory/")
    row = page.locator("#result_list tbody tr", has_text="tea, no sugar")
    expect(row).to_contain_text("Pin")
    expect(row).to_contain_text("luna")  # who said it
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
    page.locator(".anvil-filters > summary").click()
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


# --- One look, readable lists, comparisons that wrap, errors in words ---------------------

APP_BG = "rgb(13, 13, 16)"  # the chat, sign-in and Lens pages' background (static/heart/chat.css)
BAND_BG = "rgb(22, 21, 27)"  # their surfaces: the Anvil's header in both themes
LIGHT_BG = "rgb(246, 241, 232)"  # the Anvil's warm light theme


def anvil_page(context: BrowserContext, signed_in, owner, path: str) -> tuple[Page, list[str]]:
    """``path`` open in a new page of ``context`` as the owner, with every response that was
    not found recorded."""
    owner.is_staff = owner.is_superuser = True
    owner.save(update_fields=["is_staff", "is_superuser"])
    page = signed_in(context).new_page()
    missing: list[str] = []
    page.on("response", lambda r: missing.append(r.url) if r.status == 404 else None)
    page.goto(path)
    return page, missing


def computed(page: Page, selector: str, prop: str) -> str:
    return page.eval_on_selector(selector, f"e => getComputedStyle(e).{prop}")


def test_the_anvil_wears_the_apps_colours_and_icon_and_leads_with_curation(
    new_context, signed_in, owner, screenshot
):
    for size, options in [("desktop", DESKTOP), ("phone", PHONE)]:
        page, missing = anvil_page(new_context(**options), signed_in, owner, "/admin/")
        captions = page.locator("#content-main .module caption")
        expect(captions.first).to_have_text("Memory to curate")
        first_group = page.locator("#content-main .module").first.locator("th[scope=row]")
        expect(first_group).to_have_text(
            [
                "Fragments",
                "Fragment graph",
                "Working memory",
                "Suggestion queue",
                "The Compass",
                "Loom sessions",
                "Photo inbox",
                "Wake texts",
                "Ambient prose",
                "Identities",
            ]
        )
        machinery = page.locator("#content-main .module", has_text="Machinery")
        expect(machinery).to_be_hidden()  # folded behind one line
        page.locator("#content-main .anvil-machinery > summary").click()
        for name in ("Access attempts", "Failed tasks", "Ingest records", "States", "Users"):
            expect(machinery.get_by_role("link", name=name, exact=True)).to_be_visible()
        assert captions.last.inner_text().casefold() == "machinery"
        assert computed(page, "body", "backgroundColor") == APP_BG
        assert computed(page, "#header", "backgroundColor") == BAND_BG
        # The action icons are drawn in their link's colour, not the admin's green and blue.
        for icon in ("a.addlink", "a.viewlink", "a.changelink"):
            assert computed(page, icon, "backgroundImage") == "none", icon
            drawn = page.eval_on_selector(
                icon, "e => getComputedStyle(e, '::before').backgroundColor"
            )
            assert drawn == computed(page, icon, "color"), icon
        assert page.locator("link[rel=icon]").get_attribute("href").endswith("icons/icon.svg")
        assert not accessibility_problems(page)
        screenshot(page, f"index-{size}")
        assert not missing, missing
        if size == "desktop":
            desktop = page
    assert page.request.get("/favicon.ico").ok

    # The admin's theme button offers a light look in the same warm colours.
    page = desktop
    page.evaluate("() => localStorage.setItem('theme', 'light')")
    page.get_by_role("link", name="Working memory").first.click()
    expect(page.locator("#changelist")).to_be_visible()
    assert computed(page, "body", "backgroundColor") == LIGHT_BG
    assert computed(page, "#header", "backgroundColor") == BAND_BG
    assert not accessibility_problems(page)
    assert not missing, missing
    screenshot(page, "working-memory-light-desktop")


LONG_PLAN = (
    "Call the physio about moving Thursday's appointment to the morning, and ask whether the "
    "new exercises for the left knee should be done before or after the evening walk by the "
    "river, since the last two sessions left it sore until the next afternoon."
)


@pytest.fixture
def a_full_evening():
    """Working memory with long items and due dates, and a queue of six suggestions from two
    Mirror summaries."""
    due = timezone.now() + timedelta(days=2)
    WorkingMemory.objects.create(
        type="plan", content=LONG_PLAN, subject="physio", actor="luna", due=due
    )
    for n in range(5):
        WorkingMemory.objects.create(
            type="pin", content=f"tea without sugar, the blue cup, item {n}", actor="renki"
        )
    for first_words in ("Luna spoke of tea", "Renki planned the week"):
        first = Event.objects.create(content=f"{first_words}.", actor="luna")
        summary = Summary.objects.create(
            level="L0",
            first_event_id=first.pk,
            last_event_id=first.pk,
            content=f"{first_words}, at length, with the pharmacy and the plants in between.",
        )
        for n in range(3):
            TagSuggestion.objects.create(summary=summary, type="pin", content=f"{first_words} {n}")


def overflows(page: Page) -> bool:
    """Whether the page or its list is wider than the window, to be scrolled sideways."""
    return page.evaluate(
        "() => document.documentElement.scrollWidth > document.documentElement.clientWidth"
        " || document.querySelector('#changelist .results').scrollWidth"
        " > document.querySelector('#changelist .results').clientWidth"
    )


def within_view(page: Page, locator) -> bool:
    box = locator.bounding_box()
    return (
        box is not None and box["x"] >= 0 and box["x"] + box["width"] <= page.viewport_size["width"]
    )


def test_working_memory_the_queue_and_fragments_read_at_1280_and_on_a_phone(
    new_context, signed_in, owner, a_full_evening, wardrobe, screenshot
):
    for size, options in [("desktop", DESKTOP), ("phone", PHONE)]:
        page, _ = anvil_page(new_context(**options), signed_in, owner, "/admin/gem/workingmemory/")
        rows = page.locator("#result_list tbody tr")
        expect(rows).to_have_count(6)
        plan = page.locator("#result_list tbody tr", has_text="Call the physio")
        due_header = page.locator("#result_list thead th.column-due_date")
        assert within_view(page, due_header), f"Due is off screen on the {size}"
        assert within_view(page, plan.locator("td.field-due_date"))
        # The plan's content is cut to two lines, the whole of it one click away.
        content = plan.locator("td.field-content_excerpt")
        line = float(computed(page, "#result_list td.field-content_excerpt", "lineHeight")[:-2])
        assert content.bounding_box()["height"] < 3 * line + 16
        content.get_by_text("Call the physio").click()
        expect(content.locator("details")).to_have_attribute("open", "")
        assert content.bounding_box()["height"] > 3 * line + 16
        if size == "desktop":
            assert not overflows(page)
            importance = page.locator("#result_list thead th.column-importance .text")
            assert importance.evaluate("e => e.scrollWidth <= e.clientWidth")
        screenshot(page, f"working-memory-{size}")

        page.goto("/admin/mirror/tagsuggestion/")
        expect(page.locator("#result_list tbody tr")).to_have_count(6)
        for first_words in ("Luna spoke of tea", "Renki planned the week"):
            expect(page.get_by_text(f"{first_words}, at length")).to_have_count(1)
        if size == "desktop":
            assert not overflows(page)
        screenshot(page, f"queue-{size}")

        page.goto("/admin/gem/fragment/")
        expect(page.locator("#result_list tbody tr")).to_have_count(3)
        if size == "desktop":
            assert not overflows(page)
        screenshot(page, f"fragments-{size}")


def test_a_wake_text_comparison_wraps_with_the_page(new_context, signed_in, owner, screenshot):
    before = "She wakes slowly. " * 30 + "\nTea first, always green, never sweet."
    after = "She wakes slowly. " * 30 + "\nTea first, always green, with honey on Sundays."
    WakeText.objects.create(kind="wake", content=before)
    newest = WakeText.objects.create(kind="wake", content=after)
    for size, options in [("desktop", DESKTOP), ("phone", PHONE)]:
        page, _ = anvil_page(
            new_context(**options), signed_in, owner, f"/admin/gem/waketext/diff/?new={newest.pk}"
        )
        expect(page.locator(".anvil-diff ins")).to_have_text(["with honey on Sundays"])
        expect(page.locator(".anvil-diff del")).to_have_text(["never sweet"])
        assert not page.get_by_text(">", exact=True).count()
        cells_fit = page.eval_on_selector_all(
            ".anvil-diff td", "cells => cells.every(c => c.scrollWidth <= c.clientWidth)"
        )
        assert cells_fit
        assert not page.evaluate(
            "() => document.documentElement.scrollWidth > document.documentElement.clientWidth"
        )
        assert not accessibility_problems(page)
        screenshot(page, f"wake-text-diff-{size}")


def test_a_self_edge_is_refused_in_words(admin_page: Page, wardrobe, screenshot):
    page = admin_page
    page.goto("/admin/gem/fragment/fairy/change/")
    page.get_by_role("button", name=re.compile("add another edge to", re.I)).click()
    page.locator("#id_edges_out-0-relation").fill("mirror")
    select2_choose(page, "edges_out-0", "fairy")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator(".errorlist")).to_contain_text("A fragment cannot link to itself.")
    expect(page.get_by_text("gem_edge_not_a_loop")).to_have_count(0)
    screenshot(page, "self-edge-desktop")


def test_the_offline_mirrors_queue_says_who_asked_and_keeps_two_tags_apart(
    new_context, signed_in, owner, settings, screenshot
):
    settings.COMPANION_OFFLINE = True
    said = timezone.now() - timedelta(days=3)
    for actor, words in [
        ("luna", "<pin>genmaicha with honey</pin><pin>walks by the Ouse at dusk</pin>"),
        ("luna", "can you remember that I hate cilantro?"),
        ("renki", "remind me to water the plants tonight"),
    ]:
        Event.objects.create(ts=said, actor=actor, content=f"<{actor}>{words}</{actor}>")
        reply = "<say>Noted, and kept.</say>"
        Event.objects.create(ts=said + timedelta(seconds=20), actor="claude", content=reply)
        said += timedelta(minutes=1)
    assert mirror_run(force=True).status == "done"

    for size, options in [("desktop", DESKTOP), ("phone", PHONE)]:
        page, _ = anvil_page(
            new_context(**options), signed_in, owner, "/admin/mirror/tagsuggestion/"
        )
        said_by = {
            content: page.locator(
                "#result_list tbody tr",
                has=page.locator(".field-content_excerpt", has_text=content),
            ).locator(".field-subject")
            for content in ("I hate cilantro", "water the plants tonight")
        }
        expect(said_by["I hate cilantro"]).to_have_text("luna")
        expect(said_by["water the plants tonight"]).to_have_text("renki")
        summary = page.locator("#result_list .field-summary_excerpt").first
        summary.locator("summary").click()  # the whole text, one click away
        expect(summary).to_contain_text("luna: genmaicha with honey; walks by the Ouse at dusk")
        expect(summary).not_to_contain_text("honeywalks")
        screenshot(page, f"offline-queue-{size}")


def test_a_plans_page_draws_its_decay_with_phases_now_and_due_on_a_desktop_and_a_phone(
    new_context, signed_in, owner, screenshot
):
    now, hour = timezone.now(), timedelta(hours=1)
    for number in range(1, 31):  # a turn every two hours up to now
        said = Event.objects.create(content=f"message {number}", actor="luna")
        Turn.objects.create(event=said, number=number, queued_at=now - (60 - 2 * number) * hour)
    state_set(TURN_COUNTER, 30)
    plan = WorkingMemory.objects.create(
        type="plan",
        content="call the physio about Thursday",
        actor="luna",
        refreshed_at=now - 72 * hour,
        turn=0,
        due=now + 30 * hour,
    )
    for size, options in [("desktop", DESKTOP), ("phone", PHONE)]:
        page, missing = anvil_page(
            new_context(**options), signed_in, owner, f"/admin/gem/workingmemory/{plan.pk}/change/"
        )
        section = page.locator(".anvil-decay")
        expect(section.locator(".anvil-decay-summary")).to_contain_text("Now 0.")
        expect(section.locator(".anvil-decay-summary")).to_contain_text("(rise to due); due")
        picture = section.locator(f".anvil-decay-{'wide' if size == 'desktop' else 'narrow'}")
        expect(picture).to_be_visible()
        expect(section.locator("svg:visible")).to_have_count(1)
        assert within_view(page, picture)
        for phase in ("drop", "floor", "rise to due", "grace", "fall"):
            expect(section.locator(".anvil-decay-phases")).to_contain_text(phase)
        expect(picture.locator(".anvil-decay-now text")).to_have_text("now")
        expect(picture.locator(".anvil-decay-due text")).to_have_text("due")
        expect(picture.locator(".anvil-decay-floor text")).to_be_visible()
        expect(section.locator("figcaption")).to_contain_text("by the clock alone")
        # The curve and the floor line take the theme's colours (unstyled, SVG draws them black).
        for selector in (".anvil-decay-past", ".anvil-decay-floor line"):
            assert computed(page, f"#{picture.get_attribute('id')} {selector}", "stroke") not in (
                "none",
                "rgb(0, 0, 0)",
            )
        assert not page.evaluate(
            "() => document.documentElement.scrollWidth > document.documentElement.clientWidth"
        )
        # axe on the picture and its words, which are what this test adds to the page.
        found = Axe().run(page, context=".anvil-decay", options=AXE_OPTIONS).response
        assert not [v["id"] for v in found["violations"] if v["impact"] in ("serious", "critical")]
        picture.scroll_into_view_if_needed()
        screenshot(page, f"decay-plan-{size}")
        assert not missing, missing
