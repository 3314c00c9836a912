"""The Lens page in a real browser: a fragment, and a neighbour reached by its link."""

import re

from playwright.sync_api import expect

from gem.models import Fragment, FragmentEdge, WorkingMemory, WorkingMemoryRef
from tests.browser.conftest import BROWSER_DB, PHONE

pytestmark = BROWSER_DB


def lens_gem() -> None:
    fairy = Fragment.objects.create(
        key="fairy",
        ambient="A small light that follows her home.",
        recognition="She came with the first snow.\n\n## Not a section\nKept as written.",
        inventory="",
    )
    well = Fragment.objects.create(key="well", ambient="Deep and cold; the fairy sleeps there.")
    moon = Fragment.objects.create(key="moon", ambient="Watches the village.")
    FragmentEdge.objects.create(source=fairy, target=well, relation="lives in")
    FragmentEdge.objects.create(source=moon, target=fairy, relation="guides")
    wm = WorkingMemory.objects.create(type="thought", content="She asked about the fairy again.")
    WorkingMemoryRef.objects.create(wm=wm, fragment=fairy)


def test_it_shows_a_fragment_and_follows_a_neighbour_link(
    context, new_context, signed_in, screenshot
):
    lens_gem()
    page = signed_in(context).new_page()
    page.goto("/lens/fragments/fairy/")

    expect(page.get_by_role("heading", name="fairy", exact=True)).to_be_visible()
    expect(page.get_by_role("region", name="recognition")).to_contain_text("## Not a section")
    expect(page.get_by_role("region", name="inventory")).to_contain_text("empty")
    expect(page.get_by_role("region", name="edges")).to_contain_text("lives in")
    expect(page.get_by_text("Deep and cold; the fairy sleeps there.")).to_be_visible()
    screenshot(page, "desktop")

    page.get_by_role("link", name="well", exact=True).click()

    expect(page).to_have_url(re.compile(r"/lens/fragments/well/$"))
    expect(page.get_by_role("heading", name="well", exact=True)).to_be_visible()
    expect(page.get_by_role("region", name="edges")).to_contain_text("fairy lives in")

    phone = signed_in(new_context(**PHONE)).new_page()
    phone.goto("/lens/fragments/fairy/")
    expect(phone.get_by_role("heading", name="fairy", exact=True)).to_be_visible()
    screenshot(phone, "phone")


def test_it_sends_a_logged_out_visitor_to_sign_in(context, owner):
    page = context.new_page()
    page.goto("/lens/fragments/fairy/")
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next=/lens/fragments/fairy/$"))


def test_the_key_box_shows_what_connects_two_keys(context, signed_in, screenshot):
    lens_gem()
    page = signed_in(context).new_page()
    page.goto("/lens/")

    page.get_by_label("Fragment keys").fill("well moon")
    page.get_by_label("Fragment keys").press("Enter")

    expect(page).to_have_url(re.compile(r"/lens/connect/\?keys=well\+moon&depth=4$"))
    expect(page.locator(".path")).to_have_text("well←lives in—fairy←guides—moon")
    screenshot(page, "desktop")


def test_the_search_page_finds_memory_and_fragments_and_opens_one(context, signed_in, screenshot):
    lens_gem()
    WorkingMemory.objects.create(type="pin", content="Bring the brass lantern to the well.")
    page = signed_in(context).new_page()
    page.goto("/lens/")
    page.get_by_role("link", name="search", exact=True).click()

    page.get_by_label("Words").fill("lantern well")
    page.get_by_label("Words").press("Enter")

    hits = page.locator("#results .hit")
    expect(hits.first).to_be_visible()
    expect(page.locator("#results")).to_contain_text("Bring the brass lantern to the well.")
    expect(page.locator("#results")).to_contain_text("fragment:well")
    expect(page).to_have_url(re.compile(r"/lens/search/\?q=lantern(%20|\+)well"))
    screenshot(page, "desktop")

    page.get_by_role("link", name="fragment:well").click()
    expect(page).to_have_url(re.compile(r"/lens/fragments/well/$"))
