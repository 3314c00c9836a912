"""The Lens page in a real browser: a fragment, and a neighbour reached by its link."""

import re
from datetime import UTC, datetime, timedelta

from playwright.sync_api import expect

from gem.models import Fragment, FragmentEdge, WorkingMemory, WorkingMemoryRef
from heart.ingest import event_record
from tests.browser.conftest import BROWSER_DB, PHONE, accessibility_problems

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


def test_the_search_page_puts_a_matching_fragment_first_and_pages_the_turns(
    context, new_context, signed_in, screenshot
):
    """A fragment whose tier holds the word comes before the many turns that say it, shows that
    tier with the word marked, the turns show what the chat shows, and one word makes a page
    of ten hits that a phone scrolls through in a few screens."""
    start = datetime(2026, 3, 2, 18, 0, tzinfo=UTC)
    for n in range(14):
        asked = f"<luna>physio again today, round {n} <plan>stretch the knee {n}</plan></luna>"
        event_record(text=asked, actor="luna", ts=start + timedelta(minutes=2 * n))
        answer = "<say>Good luck with the physio, love.</say> recall(about)"
        event_record(text=answer, actor="claude", ts=start + timedelta(minutes=2 * n + 1))
    Fragment.objects.create(
        key="physio",
        ambient="Luna's knee, mending slowly.",
        recognition="Physio on Tuesdays at ten, with Mara.",
    )
    for size, browser_context in (("desktop", context), ("phone", new_context(**PHONE))):
        page = signed_in(browser_context).new_page()
        page.goto("/lens/search/?q=physio")

        hits = page.locator("#results .hit")
        expect(hits).to_have_count(10)
        expect(hits.first.locator("header")).to_contain_text("fragment:physio · recognition")
        expect(hits.first.locator(".snippet mark")).to_have_text("Physio")
        shown = page.locator("#results").inner_text()
        assert "<say>" not in shown and "<plan>" not in shown and "recall(" not in shown
        assert "1–10 of" in shown
        assert page.evaluate("document.documentElement.scrollHeight") < 3000
        assert not accessibility_problems(page)
        screenshot(page, size)

    page.get_by_role("link", name="next").click()
    expect(page).to_have_url(re.compile(r"/lens/search/\?q=physio&page=2$"))
    expect(page.locator("#results ol.hits")).to_have_attribute("start", "11")
    expect(page.get_by_role("link", name="previous")).to_be_visible()
