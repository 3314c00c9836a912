"""Reading the Compass's answer: reasoning, proposals and their dues (``compass.answer``)."""

import json
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compass.answer import (
    PROPOSALS_MAX,
    AnswerError,
    answer_parse,
    answer_render,
    due_read,
    due_written,
)

pytestmark = pytest.mark.store_free

ZONE = "Europe/Amsterdam"
AMSTERDAM = ZoneInfo(ZONE)
NOW = datetime(2026, 11, 24, 10, 0, tzinfo=AMSTERDAM)  # a Tuesday


def parse(text: str):
    return answer_parse(text, now=NOW, time_zone=ZONE)


def answer(*rows: dict, reasoning: str = "I weighed the month.") -> str:
    return answer_render(reasoning, list(rows))


def row(plan="Run 5 km", due="2026-11-26T07:30", why="A start.", **more) -> dict:
    return {"plan": plan, "due": due, "why": why, **more}


def test_it_reads_the_reasoning_and_each_proposal_in_the_owners_zone():
    read = parse(
        answer(
            row(),
            row(plan="Rest day", due="friday at 5pm", why="Legs recover.", hidden=True),
            row(plan="Race", due="2026-12-01T09:00+00:00", why="The goal."),
            reasoning="First the base, then the race.",
        )
    )
    assert read.reasoning == "First the base, then the race."
    assert [(p.plan, p.due, p.why, p.hidden) for p in read.proposals] == [
        ("Run 5 km", datetime(2026, 11, 26, 7, 30, tzinfo=AMSTERDAM), "A start.", False),
        ("Rest day", datetime(2026, 11, 27, 17, 0, tzinfo=AMSTERDAM), "Legs recover.", True),
        ("Race", datetime(2026, 12, 1, 9, 0, tzinfo=UTC), "The goal.", False),
    ]


def test_a_date_alone_is_due_at_the_start_of_that_day():
    assert due_read("2026-12-03", now=NOW, time_zone=ZONE) == datetime(
        2026, 12, 3, tzinfo=AMSTERDAM
    )


def test_the_last_fenced_block_is_the_list_and_an_empty_list_proposes_nothing():
    text = "Like this:\n```\n[1, 2]\n```\nNothing needs doing.\n```json\n[]\n```"
    read = parse(text)
    assert read.proposals == ()
    assert read.reasoning.endswith("Nothing needs doing.")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("Just prose, no list.", "no fenced JSON list"),
        ('Why.\n```json\n[{"plan": "x",}]\n```', "not valid JSON: .* line 1, column"),
        ('Why.\n```json\n{"plan": "x"}\n```', "a JSON list of objects, not an object"),
        (answer("a plan"), "Proposal 1 is a text, not an object"),
        (answer({"plan": "x", "why": "y"}), "Proposal 1 has no “due”"),
        (answer(row(), row(why="  ")), "Proposal 2’s “why” must be some text"),
        (answer(row(hiden=True)), "Proposal 1 has fields the format does not know: “hiden”"),
        (answer(row(hidden="yes")), r"Proposal 1 \(“Run 5 km”\): “hidden” must be true or false"),
        (answer(row(plan="Swim", due="someday")), "Proposal 1 \\(“Swim”\\): its due “someday”"),
        (
            answer(row(), row(plan="Swim", due="2026-11-20T09:00")),
            "Proposal 2 \\(“Swim”\\) is due 20 Nov 2026, 09:00, which is not after "
            "24 Nov 2026, 10:00 \\(Europe/Amsterdam\\)",
        ),
        (answer(row(due="2026-11-24T10:00")), "is due 24 Nov 2026, 10:00, which is not after"),
        (answer(*[row()] * (PROPOSALS_MAX + 1)), f"at most {PROPOSALS_MAX} are taken"),
    ],
)
def test_it_refuses_an_answer_whole_naming_what_is_wrong(text, says):
    with pytest.raises(AnswerError, match=says):
        parse(text)


def test_a_plan_in_words_that_have_passed_is_refused():
    with pytest.raises(AnswerError, match=r"Proposal 1 .* is due 24 Nov 2026, 10:00"):
        parse(answer(row(due="yesterday at 9am")))


def test_it_writes_a_due_as_the_owners_local_time():
    assert due_written(datetime(2026, 12, 1, 8, 0, tzinfo=UTC), time_zone=ZONE) == (
        "2026-12-01T09:00"
    )


PLAN_TEXT = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"]), min_size=1
).filter(str.strip)


@settings(max_examples=60)
@given(
    st.lists(
        st.tuples(
            PLAN_TEXT.map(lambda t: " ".join(t.split())[:200]).filter(bool),
            st.integers(min_value=1, max_value=60 * 24 * 365),
            PLAN_TEXT,
            st.booleans(),
        ),
        max_size=PROPOSALS_MAX,
    ),
    st.text(),
)
def test_what_is_written_in_the_format_reads_back_the_same(plans, reasoning):
    rows = [
        {
            "plan": plan,
            "due": due_written(NOW + timedelta(minutes=m), time_zone=ZONE),
            "why": why,
            "hidden": hidden,
        }
        for plan, m, why, hidden in plans
    ]
    text = answer_render(reasoning.replace("```", "'''"), rows)
    read = parse(text)
    assert [(p.plan, p.due, p.why, p.hidden) for p in read.proposals] == [
        (plan, (NOW + timedelta(minutes=m)).replace(second=0), why.strip(), hidden)
        for plan, m, why, hidden in plans
    ]


@settings(max_examples=80)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=12),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(st.sampled_from(["plan", "due", "why", "hidden", "x"]), inner)
        ),
        max_leaves=8,
    ),
    st.text(max_size=40),
)
def test_any_answer_is_read_or_refused_with_an_answer_error(value, prose):
    text = f"{prose}\n```json\n{json.dumps(value)}\n```"
    try:
        parse(text)
    except AnswerError as error:
        assert str(error)
