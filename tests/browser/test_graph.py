"""The fragment graph in a real browser, on a desktop and a phone: every fragment's key readable
(no two drawn over each other), the picture fitted to its canvas, nothing in the console, a
fragment opening its page when tapped. Screenshots go to ``test-artifacts/``."""

import random
import re
from collections.abc import Callable

from django.urls import reverse
from playwright.sync_api import BrowserContext, ConsoleMessage, Page, expect

from gem.models import Fragment, FragmentEdge
from tests.browser.conftest import BROWSER_DB, DESKTOP, PHONE, accessibility_problems

pytestmark = BROWSER_DB

WORDS = "tea dusk honey walk plants pharmacy crewneck snow piano garden rain winter".split()
RELATIONS = ["near", "kin", "part of", "worn with", "reminds her of", ""]
WARDROBE = ["fairy", "ouji", "cottagecore", "grey-crewneck", "first-snow-of-winter"]
CROWD = 195  # with the wardrobe, the 200 fragments of the whole graph

# What the page drew, read back from cytoscape: each fragment's box with its key, in the
# canvas's own pixels, the canvas's size and how long the layout took.
DRAWN = """() => ({
  boxes: anvilGraph.nodes().map((node) => {
    const box = node.renderedBoundingBox({ includeLabels: true });
    return { key: node.id(), x1: box.x1, x2: box.x2, y1: box.y1, y2: box.y2 };
  }),
  width: anvilGraph.width(),
  height: anvilGraph.height(),
  layoutMs: performance.getEntriesByName("anvil-graph-layout", "measure").map((m) => m.duration)[0],
})"""


def seed() -> None:
    """A wardrobe of five linked fragments, apart from a crowd of 195 others, each linked to
    one before it, some to a second, every eighth to the first (a fragment much linked to):
    keys of one to three words, relations of all lengths."""
    draw = random.Random(26)
    keys = ["-".join(draw.sample(WORDS, 1 + i % 3)) + f"-{i}" for i in range(CROWD)]
    Fragment.objects.bulk_create(Fragment(key=key) for key in WARDROBE + keys)
    edges = {
        ("cottagecore", "fairy"): "near",
        ("fairy", "ouji"): "kin",
        ("grey-crewneck", "cottagecore"): "worn with",
        ("first-snow-of-winter", "fairy"): "reminds her of",
        ("ouji", "grey-crewneck"): "",
    }
    for i in range(1, CROWD):
        edges[keys[i], keys[draw.randrange(i)]] = draw.choice(RELATIONS)
        if i % 5 == 0:
            edges[keys[i], keys[draw.randrange(i)]] = "near"
        if i % 8 == 0:
            edges[keys[i], keys[0]] = "about"
    FragmentEdge.objects.bulk_create(
        FragmentEdge(source_id=source, target_id=target, relation=relation)
        for (source, target), relation in edges.items()
    )


def overlapping(boxes: list[dict]) -> list[tuple[str, str]]:
    return [
        (a["key"], b["key"])
        for i, a in enumerate(boxes)
        for b in boxes[i + 1 :]
        if a["x1"] < b["x2"] and b["x1"] < a["x2"] and a["y1"] < b["y2"] and b["y1"] < a["y2"]
    ]


def outside(drawn: dict) -> list[str]:
    return [
        box["key"]
        for box in drawn["boxes"]
        if box["x1"] < 0
        or box["y1"] < 0
        or box["x2"] > drawn["width"]
        or box["y2"] > drawn["height"]
    ]


def drawn(page: Page, url: str) -> dict:
    page.goto(url)
    expect(page.locator("#anvil-graph[data-ready=true]")).to_be_attached()
    return page.evaluate(DRAWN)


def spread(drawn: dict) -> float:
    """How much of the canvas the picture spans, along the side it spans most of."""
    boxes = drawn["boxes"]
    width = max(box["x2"] for box in boxes) - min(box["x1"] for box in boxes)
    height = max(box["y2"] for box in boxes) - min(box["y1"] for box in boxes)
    return max(width / drawn["width"], height / drawn["height"])


def test_it_draws_every_key_apart_and_fits_the_picture_to_its_canvas(
    new_context: Callable[..., BrowserContext], signed_in, screenshot
):
    seed()
    graph = reverse("admin:gem_fragment_graph")
    console: list[str] = []

    def heard(message: ConsoleMessage) -> None:
        if message.type in ("warning", "error"):
            console.append(f"{message.type}: {message.text}")

    for size, options in (("desktop", DESKTOP), ("phone", PHONE)):
        page = signed_in(new_context(**options)).new_page()
        page.on("console", heard)
        page.on("pageerror", lambda error: console.append(f"error: {error}"))

        wardrobe = drawn(page, f"{graph}?key=fairy&depth=2")
        assert sorted(box["key"] for box in wardrobe["boxes"]) == sorted(WARDROBE)
        assert not overlapping(wardrobe["boxes"])
        assert not outside(wardrobe)
        assert spread(wardrobe) > 0.6, size
        screenshot(page, f"wardrobe-{size}")
        if size == "desktop":  # the phone's is checked with the other pages' (test_accessibility)
            assert not accessibility_problems(page)

        whole = drawn(page, graph)
        assert len(whole["boxes"]) == len(WARDROBE) + CROWD
        assert not overlapping(whole["boxes"])
        assert not outside(whole)
        print(f"{size}: 200 fragments laid out in {whole['layoutMs']:.0f} ms")
        screenshot(page, f"whole-{size}")
    assert not console, console

    # Tapping a fragment in the picture opens its page.
    page.goto(f"{graph}?key=fairy&depth=1")
    expect(page.locator("#anvil-graph[data-ready=true]")).to_be_attached()
    page.locator("#anvil-graph").scroll_into_view_if_needed()
    spot = page.evaluate(
        "() => { const p = anvilGraph.getElementById('ouji').renderedPosition();"
        " const box = document.getElementById('anvil-graph').getBoundingClientRect();"
        " return [box.left + p.x, box.top + p.y]; }"
    )
    page.touchscreen.tap(*spot)
    expect(page).to_have_url(re.compile(r"/admin/gem/fragment/ouji/change/$"))
