"""The Lens's reads: a fragment, what connects several, working memory, summaries."""

from contextlib import ExitStack
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.db import connections, transaction
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from events.selectors import source_events
from gem.draft import draft_diff, draft_parse, part_digest
from gem.models import Fragment, FragmentEdge, FragmentSource, WorkingMemory, WorkingMemoryRef
from gem.selectors import gem_current, working_memory_scored
from gem.state import TURN_COUNTER, state_set
from lens.extract import (
    LensError,
    fragment_markdown,
    intersection,
    intersection_markdown,
    summaries_markdown,
    working_memory_lingering,
    working_memory_markdown,
)
from mirror.models import Summary
from tests.gem.test_draft_render import relations, tier_texts

pytestmark = pytest.mark.django_db(databases="__all__")

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=ZoneInfo("UTC"))


def fragment(key, **tiers):
    return Fragment.objects.create(key=key, **tiers)


def edge(source, target, relation=""):
    return FragmentEdge.objects.create(source_id=source, target_id=target, relation=relation)


@pytest.fixture
def graph():
    """fairy → well → village ← moon; fairy ← star; lake alone; mist — fairy (both ways)."""
    for key in ("fairy", "well", "village", "moon", "star", "lake", "mist"):
        fragment(key, ambient=f"The {key}.")
    edge("fairy", "well", "lives in")
    edge("well", "village", "")
    edge("moon", "village", "watches")
    edge("star", "fairy", "guides")
    edge("mist", "fairy", "hides")
    edge("fairy", "mist", "breathes")


# --- One fragment -----------------------------------------------------------------------------


def test_it_shows_every_tier_every_edge_both_ways_sources_and_links(graph):
    Fragment.objects.filter(key="fairy").update(
        recognition="She came with the first snow.", inventory="## Not a section\n\nDetail."
    )
    FragmentSource.objects.create(fragment_id="fairy", event_id=40)
    FragmentSource.objects.create(fragment_id="fairy", event_id=12)
    wm = WorkingMemory.objects.create(type="thought", content="asked about\nthe fairy")
    WorkingMemoryRef.objects.create(wm=wm, fragment_id="fairy")

    markdown, base = fragment_markdown("fairy").split("\n\n## written against\n\n")
    assert base == "".join(
        f"- {part} {part_digest(part, text)}\n"
        for part, text in [
            ("ambient", "The fairy."),
            ("recognition", "She came with the first snow."),
            ("inventory", "## Not a section\n\nDetail."),
            ("triggers", ""),
            ("edges", "- → mist: breathes\n- → well: lives in\n- ← mist: hides\n- ← star: guides"),
            ("sources", "12, 40"),
        ]
    )
    assert markdown + "\n" == (
        "# fairy\n\n"
        "## ambient\n\nThe fairy.\n\n"
        "## recognition\n\nShe came with the first snow.\n\n"
        "## inventory\n\n~~~\n## Not a section\n\nDetail.\n~~~\n\n"
        "## edges\n\n- → mist: breathes\n- → well: lives in\n- ← mist: hides\n- ← star: guides\n\n"
        "## sources\n\n- events 12, 40\n\n"
        f"## working memory\n\n- wm {wm.pk} · thought · active: asked about the fairy\n"
    )


def test_a_fragment_with_nothing_yet_shows_its_empty_sections():
    fragment("seed")
    assert fragment_markdown("seed").split("\n\n## written against")[0] + "\n" == (
        "# seed\n\n## ambient\n\n## recognition\n\n## inventory\n\n## edges\n"
    )


def test_a_fragment_with_triggers_shows_them_after_its_tiers_one_without_no_section(graph):
    Fragment.objects.filter(key="fairy").update(triggers=["wisp", " the little light"])
    markdown = fragment_markdown("fairy")
    assert '## inventory\n\n## triggers\n\n- wisp\n- " the little light"\n\n## edges\n' in markdown
    assert f"- triggers {part_digest('triggers', '- wisp\n- " the little light"')}\n" in markdown
    assert draft_parse(markdown).fragments[0].triggers == ["wisp", " the little light"]
    assert "## triggers" not in fragment_markdown("well")
    connecting = intersection_markdown(["fairy", "well"])
    assert connecting.count("## triggers") == 1
    assert draft_diff(draft_parse(connecting), events_found=source_events).is_empty


def test_an_unknown_key_is_named_with_the_nearest_keys(graph):
    with pytest.raises(LensError) as caught:
        fragment_markdown("fary")
    assert str(caught.value) == "No fragment “fary” (did you mean fairy?)."

    with pytest.raises(LensError) as caught:
        intersection(["fairy", "zzz", "moom"])
    assert str(caught.value) == "No fragment “zzz”. No fragment “moom” (did you mean moon?)."


@st.composite
def gems(draw):
    keys = draw(
        st.lists(
            st.from_regex(r"[\w][\w'-]{0,12}", fullmatch=True), min_size=1, max_size=4, unique=True
        )
    )
    tiers = [
        {tier: draw(tier_texts) for tier in ("ambient", "recognition", "inventory")} for _ in keys
    ]
    pairs = draw(
        st.lists(st.tuples(st.sampled_from(keys), st.sampled_from(keys)), max_size=6, unique=True)
    )
    edges = [(s, t, draw(relations)) for s, t in pairs if s != t]
    return keys, tiers, edges


@given(gems())
@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_fragment_read_back_as_a_draft_is_no_change(gem):
    keys, tiers, edges = gem
    with transaction.atomic():
        Fragment.objects.bulk_create(
            Fragment(key=key, **text) for key, text in zip(keys, tiers, strict=True)
        )
        FragmentEdge.objects.bulk_create(
            FragmentEdge(source_id=s, target_id=t, relation=r) for s, t, r in edges
        )
        for key in keys:
            diff = draft_diff(draft_parse(fragment_markdown(key)), events_found=source_events)
            assert diff.is_empty, diff.as_text()
        if len(keys) > 1:
            diff = draft_diff(draft_parse(intersection_markdown(keys)), events_found=source_events)
            assert diff.is_empty, diff.as_text()
        transaction.set_rollback(True)


# --- What connects several --------------------------------------------------------------------


def test_it_finds_the_shortest_path_following_edges_either_way(graph):
    found = intersection(["fairy", "moon"])

    assert found.connected
    assert [path.text() for path in found.paths] == [
        "fairy —lives in→ well → village ←watches— moon"
    ]
    assert [f.key for f in found.fragments] == ["fairy", "moon", "well", "village"]
    assert found.common == ["village", "well", "mist", "star"]  # within 4 edges of both


def test_three_keys_get_a_path_for_every_pair(graph):
    found = intersection(["star", "village", "fairy"])
    assert [path.text() for path in found.paths] == [
        "star —guides→ fairy —lives in→ well → village",
        "star —guides→ fairy",
        "village ← well ←lives in— fairy",
    ]


def test_it_says_clearly_when_nothing_connects_them(graph):
    markdown = intersection_markdown(["fairy", "lake"])
    assert "Nothing connects them within 4 edges." in markdown
    assert "- fairy and lake are not connected within 4 edges" in markdown
    assert "Paths:" not in markdown
    assert "# fairy\n" in markdown and "# lake\n" in markdown


def test_a_path_longer_than_the_depth_does_not_count(graph):
    assert not intersection(["fairy", "moon"], depth=2).connected
    assert intersection(["fairy", "moon"], depth=3).connected


def test_its_markdown_is_the_paths_then_the_fragments_on_them(graph):
    markdown = intersection_markdown(["fairy", "village"])
    assert markdown.startswith(
        "Lens: what connects fairy, village (paths of at most 4 edges)\n\n"
        "Paths:\n\n- fairy —lives in→ well → village\n\n"
        "Reached from every one of them: well, mist, moon, star\n\n# fairy\n"
    )
    assert [f.key for f in draft_parse(markdown).fragments] == ["fairy", "village", "well"]


def test_an_intersection_needs_two_keys(graph):
    with pytest.raises(LensError, match="at least two different keys"):
        intersection(["fairy", "fairy"])


# --- Working memory and summaries -------------------------------------------------------------


def test_working_memory_comes_with_the_scores_the_heart_uses(graph):
    state_set(TURN_COUNTER, 7)
    fresh = WorkingMemory.objects.create(
        type="feeling", content="glad", subject="luna", turn=7, refreshed_at=NOW
    )
    old = WorkingMemory.objects.create(
        type="thought", content="the well\nagain", turn=2, refreshed_at=NOW - timedelta(hours=5)
    )
    WorkingMemory.objects.create(type="thought", content="gone", status="resolved", turn=1)
    WorkingMemoryRef.objects.create(wm=old, fragment_id="well")
    WorkingMemoryRef.objects.create(wm=old, fragment_id="fairy")
    expected = working_memory_scored(gem_current().working_memory, now=NOW, current_turn=7)

    turn, items = working_memory_lingering(now=NOW)

    assert turn == 7
    assert [(i.row.id, i.score) for i in items] == [(row.id, s) for row, s in expected]
    assert [i.row.id for i in items] == [fresh.pk, old.pk]
    assert items[1].fragments == ["fairy", "well"]
    markdown = working_memory_markdown(now=NOW)
    assert markdown.startswith("# Working memory\n\n2 active, strongest first; scores at turn 7")
    assert (
        f"- **{expected[1][1]:.3f}** · wm {old.pk} · thought · fragments: fairy, well: "
        "the well again\n"
    ) in markdown
    assert f"- **{expected[0][1]:.3f}** · wm {fresh.pk} · feeling · luna: glad\n" in markdown


def test_summaries_come_newest_first_with_their_event_ranges():
    older = Summary.objects.create(
        level="L0", first_event_id=1, last_event_id=30, content="Early days.", created_at=NOW
    )
    Summary.objects.create(
        level="L1",
        first_event_id=1,
        last_event_id=90,
        content="A season.",
        tokens=12,
        created_at=NOW + timedelta(days=1),
    )
    markdown = summaries_markdown()
    assert markdown.index("## L1 · events 1–90") < markdown.index("## L0 · events 1–30")
    assert f"#{older.pk} · " in markdown
    assert "12 tokens" in markdown and "A season." in markdown
    assert "The 1 newest" in summaries_markdown(limit=1)


def test_nothing_to_show_is_said_plainly():
    assert "Nothing is lingering." in working_memory_markdown()
    assert "The Mirror has written no summaries yet." in summaries_markdown()


# --- Reads only -------------------------------------------------------------------------------


def test_the_lens_only_ever_selects(graph, tmp_path):
    WorkingMemoryRef.objects.create(
        wm=WorkingMemory.objects.create(type="pin", content="x"), fragment_id="fairy"
    )
    Summary.objects.create(level="L0", first_event_id=1, last_event_id=2, content="s")
    draft = tmp_path / "draft.md"
    draft.write_text("# fairy\n\n## ambient\n\nChanged.\n\n## edges\n\n- → well\n\n# new\n")
    with ExitStack() as stack:
        captured = [stack.enter_context(CaptureQueriesContext(connections[a])) for a in connections]
        fragment_markdown("fairy")
        intersection_markdown(["fairy", "moon", "lake"])
        working_memory_markdown()
        summaries_markdown()
        draft_diff(draft_parse(draft.read_text()), events_found=source_events)

    queries = [q["sql"] for context in captured for q in context.captured_queries]
    assert len(queries) > 10
    assert [sql for sql in queries if not sql.lstrip().upper().startswith("SELECT")] == []
