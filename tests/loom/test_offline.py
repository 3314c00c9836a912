import pytest
from hypothesis import given
from hypothesis import strategies as st

from gem.draft import draft_parse
from loom.answer import answer_read
from loom.offline import OFFLINE_LABEL, offline_answer

pytestmark = pytest.mark.store_free


@pytest.mark.parametrize("agent", ["cataloguer", "weaver", "researcher"])
def test_it_answers_with_labelled_notes_and_a_placeholder_line_added_to_the_inventory(agent):
    text = offline_answer(
        agent=agent, key="lantern", inventory="- brass", question="Which  panes?", images=2
    )
    read = answer_read(text, patterns_allowed=agent == "weaver")
    assert read.notes.startswith(OFFLINE_LABEL)
    assert "Photos sent: 2" in read.notes
    (fragment,) = draft_parse(read.draft).fragments
    assert fragment.key == "lantern"
    assert fragment.tiers == {
        "inventory": f"- brass\n- {OFFLINE_LABEL} placeholder from the "
        f"{agent.capitalize()}: Which panes?"
    }
    assert len(read.patterns) == (1 if agent == "weaver" else 0)
    if read.patterns:
        assert read.patterns[0].content.startswith(OFFLINE_LABEL)


@given(st.text(alphabet=st.sampled_from("ab#~ \n`"), max_size=40))
def test_it_keeps_any_inventory_exactly(inventory):
    text = offline_answer(agent="cataloguer", key="k", inventory=inventory, question="", images=0)
    (fragment,) = draft_parse(answer_read(text, patterns_allowed=False).draft).fragments
    assert fragment.tiers["inventory"].startswith(inventory)
