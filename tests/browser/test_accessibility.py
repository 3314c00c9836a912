"""axe-core finds no serious or critical WCAG 2.1 AA violation on the pages a person lives in:
the chat page, the sign-in page, the Anvil's index, working memory, fragments, the graph, the
suggestion queue and the Lens's search, on a desktop and on a phone."""

from collections.abc import Callable

from django.contrib.auth.models import User
from playwright.sync_api import BrowserContext

from events.models import Event
from gem.models import Fragment, FragmentEdge, WorkingMemory
from mirror.models import Summary, TagSuggestion
from tests.browser.conftest import (
    BROWSER_DB,
    DESKTOP,
    PHONE,
    accessibility_problems,
    page_settled,
)

pytestmark = BROWSER_DB

SIGNED_IN_PAGES = [
    "/",
    "/admin/",
    "/admin/gem/workingmemory/",
    "/admin/gem/fragment/",
    "/admin/gem/fragment/graph/",
    "/admin/gem/fragment/tea/change/",
    "/admin/mirror/tagsuggestion/",
    "/lens/search/?q=tea",
]


def a_lived_in_memory() -> None:
    """A little of everything the pages list: messages, two linked fragments, a working
    memory item and a Mirror suggestion."""
    first = Event.objects.create(content="<say>I only drink tea without sugar</say>", actor="luna")
    last = Event.objects.create(content="<say>Noted: no sugar, ever.</say>", actor="claude")
    tea = Fragment.objects.create(key="tea", ambient="Green tea, no sugar, in the blue cup.")
    cup = Fragment.objects.create(key="cup", ambient="The blue cup with the chipped rim.")
    FragmentEdge.objects.create(source=tea, target=cup, relation="served in")
    WorkingMemory.objects.create(type="pin", content="tea without sugar", subject="luna")
    summary = Summary.objects.create(
        level="L0", first_event_id=first.pk, last_event_id=last.pk, content="Luna and her tea."
    )
    TagSuggestion.objects.create(summary=summary, type="pin", content="tea, no sugar")


def test_the_pages_have_no_serious_accessibility_problem(
    new_context: Callable[..., BrowserContext], owner: User, signed_in
):
    a_lived_in_memory()
    problems = []
    for size, options in [("desktop", DESKTOP), ("phone", PHONE)]:
        # One context and page for each size: the sign-in page as a visitor sees it, then the
        # owner's session given to the same context for the pages behind it.
        page = new_context(**options).new_page()
        page.goto("/accounts/login/")
        problems += [f"{size} sign-in: {found}" for found in accessibility_problems(page)]
        signed_in(page.context)
        for url in SIGNED_IN_PAGES:
            assert page_settled(page, url).ok, url
            problems += [f"{size} {url}: {found}" for found in accessibility_problems(page)]
    assert not problems, "\n".join(problems)
