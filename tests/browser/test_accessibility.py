"""axe-core finds no serious or critical WCAG 2.1 AA violation on any page a person uses: the
chat page, the sign-in page, the set-up, every page of the Anvil (the index, each list, each add
form, a change page of each model that has a row, the inspector, the costs, the why page, the
graph, the comparisons, the photo inbox) and the Lens's, on a desktop and on a phone."""

import re
from collections.abc import Callable

from django.contrib.auth.models import User
from playwright.sync_api import BrowserContext, expect

from tests.browser.conftest import (
    BROWSER_DB,
    DESKTOP,
    PHONE,
    accessibility_problems,
    page_settled,
)
from tests.browser.every_page import LENS_PAGES, SETUP_PAGE, a_lived_in_installation, anvil_pages

pytestmark = BROWSER_DB


def test_no_page_has_a_serious_accessibility_problem(
    new_context: Callable[..., BrowserContext], owner: User, signed_in
):
    a_lived_in_installation(owner)
    pages = ["/", SETUP_PAGE, *anvil_pages(owner), *LENS_PAGES]
    problems = []
    for size, options in [("desktop", DESKTOP), ("phone", PHONE)]:
        # One context and page for each size: the sign-in page as a visitor sees it, then the
        # owner's session given to the same context for the pages behind it.
        page = new_context(**options).new_page()
        page.goto("/accounts/login/")
        problems += [f"{size} sign-in: {found}" for found in accessibility_problems(page)]
        signed_in(page.context)
        for url in pages:
            assert page_settled(page, url).ok, url
            problems += [f"{size} {url}: {found}" for found in accessibility_problems(page)]
    assert not problems, "\n".join(problems)


def test_a_row_added_to_a_fragments_edges_is_named(
    new_context: Callable[..., BrowserContext], owner: User, signed_in
):
    """The edge rows a person adds on a fragment's page (a relation and a choice of fragment,
    in the admin's select2 box) are named as the form's own fields are."""
    a_lived_in_installation(owner)
    problems = []
    for size, options in [("desktop", DESKTOP), ("phone", PHONE)]:
        page = signed_in(new_context(**options)).new_page()
        page.goto("/admin/gem/fragment/tea/change/")
        for adding in page.get_by_role("button", name=re.compile("^add another", re.I)).all():
            adding.click()
        expect(page.locator(".dynamic-edges_out .select2-selection").first).to_be_visible()
        problems += [f"{size}: {found}" for found in accessibility_problems(page)]
    assert not problems, "\n".join(problems)
