"""The draft format: what a draft means, what it refuses, and how it compares with the Gem."""

import pytest

from events.models import Event
from events.selectors import source_events
from gem.draft import (
    Draft,
    DraftEdge,
    DraftError,
    DraftFragment,
    SourceAdded,
    TriggersChange,
    draft_check,
    draft_diff,
    draft_parse,
    draft_parts,
    draft_render,
    draft_written,
    fragments_now,
    part_digest,
)
from gem.models import Fragment, FragmentEdge, FragmentSource

# --- What a draft means -----------------------------------------------------------------------


def test_an_absent_section_means_unchanged_and_an_empty_one_cleared():
    draft = draft_parse("# fairy\n\n## recognition\n\n## edges\n\n# well\n\n## ambient\n\nDeep.\n")
    fairy, well = draft.fragments
    assert fairy.tiers == {"recognition": ""}
    assert fairy.edges == []
    assert well.tiers == {"ambient": "Deep."}
    assert well.edges is None


def test_it_reads_triggers_in_order_and_an_empty_section_as_none_left():
    text = '# fairy\n\n## triggers\n\n- lighthouse\n* Old Grey the seal\n- " padded "\n\n# well\n'
    fairy, well = draft_parse(text + "\n## triggers\n").fragments
    assert fairy.triggers == ["lighthouse", "Old Grey the seal", " padded "]
    assert well.triggers == []
    assert draft_parse("# moon\n\n## ambient\n\nPale.\n").fragments[0].triggers is None


def test_it_reads_windows_line_breaks_and_ascii_arrows():
    draft = draft_parse(
        "# fairy\r\n\r\n## ambient\r\n\r\nA light.\r\n\r\n"
        '## edges\r\n\r\n- -> well\r\n* <- moon: "x"\r\n'
    )
    fragment = draft.fragments[0]
    assert fragment.tiers == {"ambient": "A light."}
    assert fragment.edges == [DraftEdge("fairy", "well", ""), DraftEdge("moon", "fairy", "x")]


def test_it_reads_the_event_ids_of_a_sources_section_and_keeps_its_text():
    fragment = draft_parse("# fairy\n\n## sources\n\n- events 12, 40\n* event 7\n").fragments[0]
    assert fragment.sources == {12: 5, 40: 5, 7: 6}
    assert fragment.notes == {"sources": "- events 12, 40\n* event 7"}


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("# fairy\n\n## sources\n\n- events 12\n- events twelve\n", 6, "not a list of events"),
        ("# fairy\n\n## sources\n\nfrom the chat\n", 5, "not a list of events"),
        ("# fairy\n\n## sources\n\n- events 12, -4\n", 5, "not a list of events"),
        ("# fairy\n\n## sources\n\n- events 99999999999999999999\n", 5, "too large"),
        ("# fairy tale\n", 1, "is not a key"),
        ("Preface\n\n## ambient\n\nx\n", 3, "before any “# KEY” heading"),
        ("# fairy\n\nstray words\n", 3, "belongs to no section"),
        ("# fairy\n\n## mood\n\nsad\n", 3, "is not a section"),
        ("# fairy\n\n## ambient\n\na\n\n## ambient\n\nb\n", 7, "second “## ambient”"),
        ("# fairy\n\n# fairy\n", 3, "second fragment heading"),
        ("# fairy\n\n## inventory\n\n~~~\nnever closed\n", 5, "never closed"),
        ("# fairy\n\n## inventory\n\n~~~\ninside\n~~~\noutside\n", 8, "text after the fence"),
        ("# fairy\n\n## edges\n\n- well\n", 5, "is not an edge"),
        ("# fairy\n\n## edges\n\n- → fairy\n", 5, "to itself"),
        ("# fairy\n\n## edges\n\n- → well\n- → well: again\n", 6, "listed twice"),
        ('# fairy\n\n## edges\n\n- → well: "unclosed\n', 5, "not a JSON string"),
        ("# fairy\n\n## edges\n\n- → bad key\n", 5, "is not an edge"),
        ("# fairy\n\n## inventory\n\n~~~\nnul \x00 here\n~~~\n", 6, "NUL character"),
        (
            "# fairy\n\n## edges\n\n- → well: in\n\n# well\n\n## edges\n\n- ← fairy: out\n",
            5,
            "has the relation “in” here and “out” under “well” (line 11)",
        ),
        ("# fairy\n\n## edges\n\n- → well\n\n# well\n\n## edges\n", 5, "not under “well”"),
        ("# fairy\n\n## triggers\n\nlighthouse\n", 5, "is not a trigger"),
        ("# fairy\n\n## triggers\n\n- lighthouse\n- -- !\n", 6, "has no words in it"),
        ("# fairy\n\n## triggers\n\n- Old Grey\n\n- old-grey\n", 7, "are the same words"),
        ('# fairy\n\n## triggers\n\n- "unclosed\n', 5, 'the trigger "unclosed is not a JSON'),
        ('# fairy\n\n## triggers\n\n- "nul \\u0000 here"\n', 5, "NUL character"),
        ("# fairy\n\n## triggers\n\n" + "- word\n" * 2, 6, "are the same words"),
        ("# fairy\n\n## triggers\n\n- " + "a " * 13 + "\n", 5, "is too long"),
        (
            "# fairy\n\n## triggers\n\n" + "".join(f"- w{n}\n" for n in range(51)),
            55,
            "at most 50 triggers",
        ),
        ("# fairy\n\n## triggers\n\n## triggers\n", 5, "second “## triggers”"),
    ],
)
def test_it_refuses_what_it_cannot_place_and_names_the_line(text, line, words):
    with pytest.raises(DraftError) as caught:
        draft_parse(text)
    assert caught.value.line == line
    assert words in str(caught.value)
    assert str(caught.value).startswith(f"line {line}: ")


# --- Comparing with the Gem -------------------------------------------------------------------


@pytest.fixture
def gem(db):
    fairy = Fragment.objects.create(key="fairy", ambient="A small light.", recognition="Old\ntext")
    well = Fragment.objects.create(key="well")
    moon = Fragment.objects.create(key="moon")
    FragmentEdge.objects.create(source=fairy, target=well, relation="lives in")
    FragmentEdge.objects.create(source=moon, target=fairy)


def test_it_shows_each_kind_of_change_and_writes_nothing(gem, django_assert_max_num_queries):
    draft = draft_parse(
        "# fairy\n\n## recognition\n\nOld\nnew text\n\n## edges\n\n- → well: sleeps in\n"
        "- → star\n\n# star\n\n## ambient\n\nFar.\n"
    )
    with django_assert_max_num_queries(4):
        diff = draft_diff(draft, events_found=source_events)

    assert diff.fragments_created == ["star"]
    assert [(c.key, c.tier, c.old, c.new) for c in diff.tiers_changed] == [
        ("fairy", "recognition", "Old\ntext", "Old\nnew text"),
        ("star", "ambient", "", "Far."),
    ]
    assert diff.edges_added == [DraftEdge("fairy", "star", "")]
    assert diff.edges_removed == [DraftEdge("moon", "fairy", "")]
    assert [(e.source, e.target, e.old, e.new) for e in diff.edges_relabelled] == [
        ("fairy", "well", "lives in", "sleeps in")
    ]
    assert not diff.is_empty
    text = diff.as_text()
    assert "Fragments created: star" in text
    assert "--- fairy · recognition (now)\n+++ fairy · recognition (draft)" in text
    assert "-text\n+new text" in text
    assert "+ fairy → star" in text
    assert "- moon → fairy" in text
    assert '~ fairy → well: "lives in" → "sleeps in"' in text
    assert Fragment.objects.count() == 3
    assert FragmentEdge.objects.filter(relation="lives in").exists()


def test_it_lists_a_change_of_triggers_as_it_lists_a_tiers(gem):
    Fragment.objects.filter(key="fairy").update(triggers=["wisp"])
    draft = draft_parse(
        "# fairy\n\n## triggers\n\n- wisp\n- little light\n\n# well\n\n## triggers\n\n"
        "# star\n\n## triggers\n\n- far light\n"
    )
    diff = draft_diff(draft, events_found=source_events)

    assert [(c.key, c.tier, c.old, c.new) for c in diff.tiers_changed] == [
        ("fairy", "triggers", "- wisp", "- wisp\n- little light"),
        ("star", "triggers", "", "- far light"),
    ]
    assert isinstance(diff.tiers_changed[0], TriggersChange)
    assert diff.tiers_changed[0].triggers == ("wisp", "little light")
    assert diff.fragments_changed() == ["fairy"]  # well had none and keeps none
    text = diff.as_text()
    assert "--- fairy · triggers (now)\n+++ fairy · triggers (draft)" in text
    assert " - wisp\n+- little light" in text
    same = draft_parse("# fairy\n\n## triggers\n\n- wisp\n")
    assert draft_diff(same, events_found=source_events).is_empty


def test_it_refuses_an_edge_to_a_fragment_nobody_has(gem):
    with pytest.raises(DraftError) as caught:
        draft_diff(
            draft_parse("# fairy\n\n## edges\n\n- → well\n- ← moon\n- → nowhere\n"),
            events_found=source_events,
        )
    assert caught.value.line == 7
    assert "“nowhere” is not a fragment: add a “# nowhere” section" in str(caught.value)


def test_windows_line_breaks_in_the_gem_are_no_change(db):
    Fragment.objects.create(key="fairy", inventory="one\r\ntwo")
    diff = draft_diff(
        draft_parse("# fairy\n\n## inventory\n\none\ntwo\n"), events_found=source_events
    )
    assert diff.is_empty
    assert diff.as_text() == "No change: the Gem already holds this draft.\n"


@pytest.mark.django_db(databases=["default", "events"])
def test_it_lists_the_sources_a_draft_adds_and_refuses_one_that_is_no_event(gem):
    said = Event.objects.create(content="The fairy lives in the well.", actor="luna")
    FragmentSource.objects.create(fragment_id="fairy", event_id=12)  # recorded before: not read

    diff = draft_diff(
        draft_parse(f"# fairy\n\n## sources\n\n- events 12, {said.pk}\n\n# star\n\n## ambient\n"),
        events_found=source_events,
    )
    assert diff.sources_added == [SourceAdded("fairy", said.pk)]
    assert diff.fragments_changed() == ["fairy"]
    assert f"Sources added:\n+ fairy ← event {said.pk}" in diff.as_text()

    with pytest.raises(DraftError) as caught:
        draft_diff(
            draft_parse("# fairy\n\n## sources\n\n- events 12\n- events 404, 405\n"),
            events_found=source_events,
        )
    assert caught.value.line == 6
    assert "events 404, 405 are not in the event log" in str(caught.value)


# --- What a draft was written against ---------------------------------------------------------


def _written(key: str = "fairy") -> str:
    """A fragment as the Gem holds it now, written as a draft saying so (what the Lens writes)."""
    return draft_render(draft_written(Draft(fragments=list(fragments_now([key]).values()))))


def test_a_draft_says_what_it_was_written_against_and_reads_it_back(gem):
    text = _written()
    assert "\n## written against\n\n- ambient " in text
    (fragment,) = draft_parse(text).fragments
    assert list(fragment.base) == [
        "ambient",
        "recognition",
        "inventory",
        "triggers",
        "edges",
        "sources",
    ]
    assert fragment.base["ambient"] == part_digest("ambient", "A small light.")
    assert draft_render(draft_parse(text)) == text
    check = draft_check(draft_parse(text))
    assert (check.conflicts, check.moved(), check.unchecked) == ([], [], [])


def test_triggers_changed_meanwhile_conflict_and_apply_part_by_part(gem):
    Fragment.objects.filter(key="fairy").update(triggers=["wisp"])
    text = _written().replace("- wisp\n", "- glimmer\n").replace("A small light.", "Blue.")
    assert draft_check(draft_parse(text)).conflicts == []
    Fragment.objects.filter(key="fairy").update(triggers=["wisp", "will-o'-the-wisp"])

    check = draft_check(draft_parse(text))

    assert [part.name for part in check.conflicts] == ["fairy:triggers"]
    (part,) = check.conflicts
    assert (part.base, part.draft, part.now) == (None, "- glimmer", "- wisp\n- will-o'-the-wisp")
    kept = draft_render(Draft(fragments=[DraftFragment(key="fairy", triggers=["wisp"])]))
    assert draft_check(draft_parse(text), base=kept).conflicts[0].base == "- wisp"
    assert draft_parts(draft_parse(text), {"fairy:ambient"}).fragments[0].triggers is None
    chosen = draft_parts(draft_parse(text), {"fairy:triggers"}).fragments[0]
    assert (chosen.triggers, chosen.tiers) == (["glimmer"], {})


def test_a_written_against_line_that_is_not_one_is_refused(gem):
    with pytest.raises(DraftError, match="line 5: “- ambient 12” is not what a draft was"):
        draft_parse("# fairy\n\n## written against\n\n- ambient 12\n")


def test_the_check_shows_what_the_draft_changes_and_what_changed_meanwhile(gem):
    text = _written().replace("A small light.", "A small blue light.")
    Fragment.objects.filter(key="fairy").update(ambient="A small light that hums.")
    FragmentEdge.objects.filter(source_id="moon").delete()  # no time of the fragment moves
    check = draft_check(draft_parse(text))
    assert check.moved() == ["fairy"]
    parts = {part.part: part for part in check.parts}
    ambient, edges = parts["ambient"], parts["edges"]
    # Both changed it: what it was is not in a pasted draft, only its digest.
    assert (ambient.base, ambient.draft, ambient.now) == (
        None,
        "A small blue light.",
        "A small light that hums.",
    )
    assert ambient.changes and ambient.moved and ambient.conflict
    assert (edges.base, edges.now) == ("- → well: lives in\n- ← moon", "- → well: lives in")
    # The draft leaves its edges as they were and would put the removed one back: a conflict too.
    assert edges.moved and not edges.changes and edges.conflict
    assert not parts["recognition"].moved and not parts["recognition"].conflict
    assert [part.name for part in check.conflicts] == ["fairy:ambient", "fairy:edges"]


def test_the_text_written_against_comes_from_the_base_kept_beside_the_draft(gem):
    base = draft_render(Draft(fragments=list(fragments_now(["fairy"]).values())))
    text = draft_render(
        draft_written(
            Draft(fragments=[DraftFragment(key="fairy", tiers={"ambient": "Blue."})]),
            base=draft_parse(base).fragments,
        )
    )
    Fragment.objects.filter(key="fairy").update(ambient="Hums.")
    (kept,) = draft_check(draft_parse(text), base=base).conflicts
    (unknown,) = draft_check(draft_parse(text)).conflicts
    assert (kept.base, kept.draft, kept.now) == ("A small light.", "Blue.", "Hums.")
    assert unknown.base is None  # a draft pasted without it: only its digest is known


def test_a_fragment_the_draft_does_not_say_it_was_written_against_is_unchecked(gem):
    check = draft_check(draft_parse("# fairy\n\n## ambient\n\nBlue.\n\n# newcomer\n\n## ambient\n"))
    assert (check.unchecked, check.parts) == (["fairy"], [])


@pytest.mark.django_db(databases=["default", "events"])
def test_sources_added_meanwhile_never_conflict(gem):
    text = _written()
    said = Event.objects.create(content="The fairy lives in the well.", actor="luna")
    FragmentSource.objects.create(fragment_id="fairy", event_id=said.pk)
    check = draft_check(draft_parse(text))
    assert check.moved() == ["fairy"] and check.conflicts == []
