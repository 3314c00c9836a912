"""axe-core finds no serious or critical WCAG 2.1 AA violation on any page a person uses: the
chat page, the sign-in page, the set-up, every page of the Anvil (the index, each list, each add
form, a change page of each model that has a row, the inspector, the costs, the why page, the
graph, the comparisons, the photo inbox) and the Lens's, on a desktop and on a phone."""

from collections.abc import Callable

from django.contrib.auth.models import User
from playwright.sync_api import BrowserContext

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
