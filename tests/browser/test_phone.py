"""The Anvil on a phone (390 × 844): every page fits the window, each list's rows are cards with
every value beside its column's name, the fragment graph reads as a list above its picture, and
the buttons and links that act are big enough for a finger."""

import re
from collections.abc import Callable

from django.contrib.auth.models import User
from playwright.sync_api import BrowserContext, Page, expect

from events.models import Event
from gem.models import WorkingMemory
from tests.browser.conftest import BROWSER_DB, PHONE, SCREENSHOTS, page_settled
from tests.browser.every_page import a_lived_in_installation, anvil_pages

pytestmark = BROWSER_DB

WIDTH = PHONE["viewport"]["width"]
FINGER = 44  # px, the least a target a finger taps is on each side

# The width of the page and of each list, less the window's: more than a pixel is cut off.
OVERFLOW = """() => {
  const results = document.querySelector('#changelist .results');
  return {
    page: document.documentElement.scrollWidth - window.innerWidth,
    list: results ? results.scrollWidth - results.clientWidth : 0,
  };
}"""


def phone(new_context: Callable[..., BrowserContext], signed_in) -> Page:
    return signed_in(new_context(**PHONE)).new_page()


def too_small(page: Page, selector: str) -> list[str]:
    """The visible targets matching ``selector`` smaller than a finger, with their sizes."""
    return page.eval_on_selector_all(
        selector,
        f"""targets => targets
          .map(t => [t, t.getBoundingClientRect()])
          .filter(([t, box]) => box.width > 0 && (box.height < {FINGER} || box.width < {FINGER}))
          .map(([t, box]) => `${{t.outerHTML.slice(0, 80)}}: ${{box.width}}×${{box.height}}`)""",
    )


def test_every_anvil_page_fits_a_phone_without_a_sideways_scroll(
    new_context, owner: User, signed_in
):
    a_lived_in_installation(owner)
    page = phone(new_context, signed_in)
    cut = []
    for url in anvil_pages(owner):
        assert page_settled(page, url).ok, url
        overflow = page.evaluate(OVERFLOW)
        if overflow["page"] > 1 or overflow["list"] > 1:
            cut.append(f"{url}: {overflow}")
    assert not cut, "wider than the phone:\n" + "\n".join(cut)


def test_a_list_on_a_phone_is_cards_with_each_value_named(new_context, owner: User, signed_in):
    a_lived_in_installation(owner)
    plan = WorkingMemory.objects.get(type="plan")
    page = phone(new_context, signed_in)
    page.goto("/admin/gem/workingmemory/")
    card = page.locator("#result_list tbody tr", has_text="physio Thursday 10am")
    expect(card).to_be_visible()
    box = card.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= WIDTH
    # Each value is in the card, named after its column, and within the window.
    for column, value in [("Due", None), ("Type", "Plan"), ("Status", "Active")]:
        cell = card.locator(f'[data-label="{column}"]')
        expect(cell).to_be_visible()
        if value:
            expect(cell).to_contain_text(value)
        named = cell.evaluate("c => getComputedStyle(c, '::before').content")
        assert named == f'"{column}"', named
        cell_box = cell.bounding_box()
        assert cell_box["x"] >= 0 and cell_box["x"] + cell_box["width"] <= WIDTH, column
    # The row's link opens the item; the box that selects it is big enough for a finger.
    selecting = card.locator("input.action-select")
    assert selecting.bounding_box()["width"] >= 24
    card.locator(f'a[href$="/{plan.pk}/change/"]').first.click()
    expect(page.locator("#id_content")).to_have_value(plan.content)

    page.goto("/admin/gem/workingmemory/")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENSHOTS / "anvil-phone-table.png", animations="disabled", caret="hide")


def test_the_graph_on_a_phone_reads_as_a_list_above_its_picture(
    new_context, owner: User, signed_in
):
    a_lived_in_installation(owner)
    page = phone(new_context, signed_in)
    page.goto("/admin/gem/fragment/graph/")
    expect(page.locator("#anvil-graph[data-ready=true]")).to_be_attached()
    listed = page.get_by_role("region", name="The same, as a list")
    expect(listed).to_be_visible()
    # Every fragment, with each edge said from both ends, in words as big as the page's.
    expect(listed.locator(".anvil-graph-key")).to_have_text(["cup", "shelf", "tea"])
    tea = listed.locator("li", has=page.locator(".anvil-graph-key", has_text="tea"))
    expect(tea).to_contain_text("served in → cup")
    cup = listed.locator("> ul > li", has=page.locator(".anvil-graph-key", has_text="cup"))
    expect(cup).to_contain_text("kept on → shelf")
    expect(cup).to_contain_text("← served in from tea")
    assert float(listed.evaluate("l => getComputedStyle(l).fontSize")[:-2]) >= 13
    # The list comes first on a phone; the picture, to pinch and drag, below it.
    assert listed.bounding_box()["y"] < page.locator("#anvil-graph").bounding_box()["y"]
    assert page.evaluate("() => anvilGraph.userZoomingEnabled() && anvilGraph.userPanningEnabled()")
    assert not too_small(page, ".anvil-graph-key, .anvil-graph-form input")
    assert page.evaluate(OVERFLOW)["page"] <= 1
    listed.locator(".anvil-graph-key", has_text="shelf").click()
    expect(page).to_have_url(re.compile(r"/admin/gem/fragment/shelf/change/$"))

    page.goto("/admin/gem/fragment/graph/")
    expect(page.locator("#anvil-graph[data-ready=true]")).to_be_attached()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(
        path=SCREENSHOTS / "anvil-phone-graph.png",
        full_page=True,
        animations="disabled",
        caret="hide",
    )


def test_the_buttons_and_links_that_act_are_big_enough_for_a_finger(
    new_context, owner: User, signed_in
):
    a_lived_in_installation(owner)
    page = phone(new_context, signed_in)
    small = []
    for url, selector in [
        ("/admin/loom/inboximage/add/", ".loom-send"),
        ("/admin/gem/workingmemory/", ".object-tools a, #changelist-search input, .actions button"),
        ("/admin/gem/workingmemory/", ".anvil-filters > summary, .actions select"),
        ("/admin/mirror/tagsuggestion/", ".actions button, #result_list thead th .text a"),
        ("/admin/gem/fragment/tea/change/", ".submit-row input, .submit-row a"),
        (f"/admin/events/event/{Event.objects.first().pk}/change/", ".submit-row a"),
        ("/admin/gem/fragment/graph/", ".anvil-graph-form input"),
    ]:
        page.goto(url)
        assert page.locator(selector).count(), f"{url} has no {selector}"
        small += [f"{url}: {found}" for found in too_small(page, selector)]
    assert not small, "smaller than a finger:\n" + "\n".join(small)
