"""The Compass in a real browser, desktop and phone: consult it, watch the answer come, promote
two of three plans (one edited) and find them in working memory with their due dates.

The offline Compass answers (no API key); a thread stands in for the worker, so the page
follows the consultation from queued to done as it would with django-q2.
"""

import threading
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.db import connections
from django.utils import timezone
from playwright.sync_api import BrowserContext, Page, expect

from compass import services
from compass.models import Consultation
from compass.tasks import run_consultation_task
from gem.models import WorkingMemory
from gem.services import time_zone_set, working_memory_create
from silentstar.when import when_short
from tests.browser.conftest import (
    BROWSER_DB,
    DESKTOP,
    PHONE,
    WORKER_JOIN_SECONDS,
    accessibility_problems,
)

pytestmark = BROWSER_DB

ZONE = "Europe/Amsterdam"


@pytest.fixture
def compass_worker(monkeypatch) -> Iterator[threading.Event]:
    """Answer each queued consultation in a thread of its own, as the worker would, once the
    test sets the event it gives (so the page shows the consultation waiting first)."""
    threads: list[threading.Thread] = []
    go = threading.Event()

    def answer(consultation_id: int) -> None:
        try:
            go.wait(timeout=WORKER_JOIN_SECONDS)
            run_consultation_task(consultation_id)
        finally:
            connections.close_all()

    def enqueue(func: str, *args, **kwargs) -> str:
        assert func == "compass.tasks.run_consultation_task", func
        thread = threading.Thread(target=answer, args=args, daemon=True)
        threads.append(thread)
        thread.start()
        return thread.name

    monkeypatch.setattr(services, "async_task", enqueue)
    yield go
    go.set()
    for thread in threads:
        thread.join(timeout=WORKER_JOIN_SECONDS)
    assert not any(thread.is_alive() for thread in threads), "a consultation was still running"


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_it_consults_the_compass_and_promotes_two_of_three_plans(
    new_context, signed_in, compass_worker, screenshot, size
):
    time_zone_set(name=ZONE)
    now = timezone.now()
    # Plans already in working memory for the picture: one overdue, one hidden that clashes
    # with the first proposal (due a day after the consultation).
    for content, due, hidden in (
        ("Call the physio about the knee", now - timedelta(days=2), False),
        ("Surprise dinner for Sam", now + timedelta(days=1, minutes=30), True),
    ):
        working_memory_create(
            type="plan", content=content, actor="luna", at=now, turn=1, due=due, hidden=hidden
        )
    context: BrowserContext = signed_in(new_context(**(DESKTOP if size == "desktop" else PHONE)))
    page: Page = context.new_page()

    page.goto("/admin/compass/consultation/")
    expect(page.get_by_role("heading", name="Consult the Compass")).to_be_visible()
    assert accessibility_problems(page) == []
    page.get_by_label("Your question").fill("A training plan for the next month")
    screenshot(page, f"consult-{size}")
    page.get_by_role("button", name="Ask the Compass").click()

    expect(page.locator("#compass-status")).to_contain_text("Waiting for a worker")
    screenshot(page, f"waiting-{size}")
    compass_worker.set()
    expect(page.get_by_role("button", name="Promote selected")).to_be_visible(timeout=10_000)
    expect(page.locator(".compass-reasoning")).to_contain_text("(offline Compass)")
    picture = page.locator(f"#compass-plans-{'wide' if size == 'desktop' else 'narrow'}")
    expect(picture).to_be_visible()
    expect(picture.locator(".compass-plans-clash")).to_have_count(1)
    expect(picture.locator(".compass-plans-overdue")).to_have_count(1)
    assert accessibility_problems(page) == []
    screenshot(page, f"proposals-{size}")

    consultation = Consultation.objects.get()
    first, _, third = (p.suggestion for p in consultation.proposals.all())
    page.get_by_label("Choose plan 1").check()
    page.get_by_label("Choose plan 2").check()
    page.get_by_label("Plan 2", exact=True).fill("Keep going: three easy runs")
    page.get_by_label("Due 2").fill("15 Jan 2031, 18:30")
    page.get_by_role("button", name="Promote selected").click()

    expect(page.locator(".messagelist")).to_contain_text(
        "Promoted plan 1 into working memory (item"
    )
    expect(page.locator(".compass-promoted")).to_have_count(2)
    expect(page.get_by_label("Due 3")).to_be_visible()
    assert accessibility_problems(page) == []
    screenshot(page, f"promoted-{size}")

    promoted = WorkingMemory.objects.filter(type="plan", suggestion_id__isnull=False)
    items = {item.content: item for item in promoted}
    assert set(items) == {first.content, "Keep going: three easy runs"}
    assert all(item.status == "active" for item in items.values())
    page.get_by_role("link", name=f"working memory item {items[first.content].pk}").click()
    expect(page).to_have_url(f"/admin/gem/workingmemory/{items[first.content].pk}/change/")

    page.goto("/admin/gem/workingmemory/")
    with timezone.override(ZONE):
        dues = {
            first.content: when_short(first.due),
            "Keep going: three easy runs": "15 Jan 2031, 18:30",
        }
    for content, due in dues.items():
        row = page.locator("#result_list tbody tr", has_text=content)
        expect(row).to_contain_text(due)
    expect(page.locator("#result_list")).not_to_contain_text(third.content)
    screenshot(page, f"working-memory-{size}")


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_a_failed_consultation_shows_why_and_its_retry_answers(
    new_context, signed_in, compass_worker, screenshot, size
):
    time_zone_set(name=ZONE)
    failed = Consultation.objects.create(
        question="what should this week hold",
        asked_by="owner",
        status="failed",
        attempts=1,
        error="The Compass's answer was refused, and nothing of it was staged: Proposal 2 "
        "(“Swim”) is due 2026-11-20 09:00, which is not after 2026-11-24 10:00 "
        "(Europe/Amsterdam), the consultation's moment.",
        reply="Reasons.\n\n```json\n[]\n```",
    )
    context: BrowserContext = signed_in(new_context(**(DESKTOP if size == "desktop" else PHONE)))
    page: Page = context.new_page()

    page.goto(f"/admin/compass/consultation/{failed.pk}/change/")
    expect(page.locator(".errornote")).to_contain_text("Proposal 2 (“Swim”) is due")
    page.get_by_text("The reply as it came back").click()
    expect(page.locator(".compass-reply pre")).to_contain_text("Reasons.")
    assert accessibility_problems(page) == []
    screenshot(page, f"failed-{size}")

    page.get_by_role("button", name="Retry").click()
    expect(page.locator(".messagelist")).to_contain_text("Asked again")
    compass_worker.set()
    expect(page.get_by_role("button", name="Promote selected")).to_be_visible(timeout=10_000)
    expect(page.locator(".errornote")).to_have_count(0)
