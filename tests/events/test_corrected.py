"""The corrected view of an event (events/corrected.py)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from events.corrected import (
    ASIDE,
    ATTRIBUTION,
    CHOSEN,
    EDIT,
    RESTORATION,
    RETRACTION,
    Step,
    View,
    corrected,
)

steps = st.one_of(
    st.builds(Step, kind=st.just(EDIT), text=st.text(max_size=20)),
    st.builds(Step, kind=st.just(ATTRIBUTION), actor=st.sampled_from(["luna", "mika", "renki"])),
    st.builds(Step, kind=st.sampled_from([RETRACTION, RESTORATION, ASIDE, CHOSEN])),
)


@given(st.text(max_size=20), st.sampled_from(["luna", "mika"]), st.lists(steps, max_size=12))
def test_any_sequence_gives_the_view_of_the_last_correction_of_each_kind(content, actor, made):
    def last(*kinds):
        return next((step for step in reversed(made) if step.kind in kinds), None)

    edit, attribution = last(EDIT), last(ATTRIBUTION)
    retraction = last(RETRACTION, RESTORATION, ASIDE, CHOSEN)
    only_the_last = [step for step in (edit, attribution, retraction) if step is not None]

    view = corrected(content, actor, made)

    assert view == corrected(content, actor, only_the_last)
    assert view.content == (edit.text if edit else content)
    assert view.actor == (attribution.actor if attribution else actor)
    assert view.retracted == (retraction is not None and retraction.kind in (RETRACTION, ASIDE))
    assert view.aside == (retraction is not None and retraction.kind == ASIDE)
    assert (view.original_content, view.original_actor) == (content, actor)


def test_an_event_without_corrections_is_as_written():
    assert corrected("hello", "luna", []) == View("hello", "luna", False, "hello", "luna", False)
    assert not corrected("hello", "luna", []).corrected


def test_it_says_what_changed():
    view = corrected("helo", "mika", [Step(EDIT, text="hello"), Step(ATTRIBUTION, actor="luna")])

    assert (view.edited, view.reattributed, view.retracted) == (True, True, False)
    assert corrected("a", "luna", [Step(EDIT, text="b"), Step(EDIT, text="a")]).edited is False


def test_a_restoration_undoes_the_retraction_and_only_it():
    view = corrected("a", "luna", [Step(EDIT, text="b"), Step(RETRACTION), Step(RESTORATION)])

    assert (view.content, view.retracted) == ("b", False)


def test_an_unknown_kind_is_refused_in_words():
    with pytest.raises(ValueError, match="Unknown correction 'delete'"):
        Step("delete")
