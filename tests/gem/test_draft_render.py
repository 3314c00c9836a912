"""Writing the draft format: read back, what the Lens writes is exactly what it was."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gem.draft import TIERS, Draft, DraftEdge, DraftFragment, draft_parse, draft_render
from gem.waking import name_words, triggers_problem

pytestmark = pytest.mark.store_free

# --- Generated drafts -------------------------------------------------------------------------

keys = st.from_regex(r"[\w][\w'-]{0,20}", fullmatch=True)

AWKWARD_LINES = [
    "# a heading",
    "## recognition",
    "##",
    "#",
    "~~~",
    "~~~~",
    "```",
    "- → well: lives in",
    "",
    "   ",
    "trailing spaces   ",
    "\ttabbed",
    "**bold** _em_ `code`",
    "> quoted",
    "ünïcödé ✨ 妖精",
    "\u2028line separator\x85next",
    "lone\rcarriage",
    "windows\r",
]
# Text the Gem can hold: PostgreSQL refuses NUL characters, and so does a draft.
stored_text = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=30)
lines = st.one_of(st.sampled_from(AWKWARD_LINES), stored_text.map(lambda t: t.replace("\n", " ")))
tier_texts = st.lists(lines, max_size=6).map("\n".join)
relations = st.one_of(
    st.sampled_from(["", "lives in", ' "quoted"', "two\nlines", " padded ", "a: b", "→ ←"]),
    st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=100),
)
# Triggers a fragment can hold: odd characters, quotes and spaces where a line would lose them.
AWKWARD_TRIGGERS = [
    "lighthouse",
    "Old Grey the seal",
    ' "quoted" ',
    '"leading quote',
    'trailing quote"',
    "  padded  ",
    "two\nlines",
    "lone\rcarriage",
    "- → well: lives in",
    "# not a heading",
    "Y'lhara's",
    "ünïcödé ✨ 妖精",
    "\u2028line separator\x85next",
    "tab\tinside",
]
triggers = st.lists(
    st.one_of(
        st.sampled_from(AWKWARD_TRIGGERS),
        st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=30),
    ).filter(lambda trigger: name_words(trigger)),
    max_size=6,
    unique_by=name_words,
).filter(lambda listed: triggers_problem(listed) is None)


@st.composite
def draft_fragments(draw, key: str, others: list[str]) -> DraftFragment:
    tiers = draw(st.dictionaries(st.sampled_from(TIERS), tier_texts))
    edges = None
    if draw(st.booleans()):
        edges, pairs = [], set()
        for other in draw(st.lists(st.sampled_from(others), max_size=5)) if others else []:
            outgoing = draw(st.booleans())
            pair = (key, other) if outgoing else (other, key)
            if pair not in pairs:
                pairs.add(pair)
                edges.append(DraftEdge(*pair, draw(relations)))
    notes = {}
    if draw(st.booleans()):
        notes["sources"] = "- events 3, 7"
    return DraftFragment(
        key=key,
        tiers=dict(sorted(tiers.items(), key=lambda kv: TIERS.index(kv[0]))),
        triggers=draw(st.none() | triggers),
        edges=edges,
        notes=notes,
    )


@st.composite
def drafts(draw) -> Draft:
    names = draw(st.lists(keys, min_size=1, max_size=3, unique=True))
    outside = [k for k in draw(st.lists(keys, max_size=4, unique=True)) if k not in names]
    preface = draw(st.sampled_from(["", "Lens: what connects them", "Paths:\n\n- a → b"]))
    return Draft(
        fragments=[draw(draft_fragments(name, outside)) for name in names], preface=preface
    )


@given(drafts())
@settings(max_examples=300)
def test_it_reads_back_exactly_what_it_writes(draft):
    assert draft_parse(draft_render(draft)) == draft


@given(tier_texts)
@settings(max_examples=300)
def test_it_keeps_any_tier_text_exactly(text):
    draft = Draft(fragments=[DraftFragment(key="fairy", tiers={"inventory": text})])
    assert draft_parse(draft_render(draft)).fragments[0].tiers["inventory"] == text


@given(triggers)
@settings(max_examples=500)
def test_it_keeps_any_triggers_exactly(listed):
    draft = Draft(fragments=[DraftFragment(key="fairy", triggers=listed)])
    assert draft_parse(draft_render(draft)).fragments[0].triggers == listed


def test_it_writes_triggers_as_a_list_and_quotes_what_a_line_would_lose():
    draft = Draft(
        fragments=[
            DraftFragment(key="fairy", triggers=["lighthouse", " padded", '"quoted"', "Old Grey"]),
            DraftFragment(key="well", triggers=[]),
            DraftFragment(key="moon"),
        ]
    )
    assert draft_render(draft) == (
        '# fairy\n\n## triggers\n\n- lighthouse\n- " padded"\n- "\\"quoted\\""\n'
        "- Old Grey\n\n# well\n\n## triggers\n\n# moon\n"
    )


def test_it_writes_plain_prose_plainly_and_fences_the_rest():
    draft = Draft(
        fragments=[
            DraftFragment(
                key="fairy",
                tiers={"ambient": "A small light.", "recognition": "## not a section\nmore"},
                edges=[DraftEdge("fairy", "well", "lives in"), DraftEdge("moon", "fairy", "")],
            )
        ]
    )
    assert draft_render(draft) == (
        "# fairy\n\n## ambient\n\nA small light.\n\n## recognition\n\n"
        "~~~\n## not a section\nmore\n~~~\n\n## edges\n\n- → well: lives in\n- ← moon\n"
    )


def test_a_fence_is_longer_than_any_fence_inside():
    text = "~~~\ninside\n~~~~"
    rendered = draft_render(Draft(fragments=[DraftFragment("k", tiers={"inventory": text})]))
    assert "~~~~~\n~~~\ninside\n~~~~\n~~~~~" in rendered
