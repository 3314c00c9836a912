"""The retrieval evaluation harness on the small generated dataset."""

import pytest

from bench.evaluate import DatasetError, dataset_check, dataset_load, evaluate, plain_bm25
from events.models import Event

pytestmark = pytest.mark.django_db(databases="__all__")


def test_it_measures_recall_at_k_by_category_and_leaves_nothing_behind(small_path):
    data = dataset_load(small_path)
    result = evaluate(data, ks=[5, 10, 25])
    assert result["questions"] == len(data["questions"])
    assert set(result) == {"overall", "by_category", "questions", "plain_bm25"}
    assert result["plain_bm25"] == plain_bm25(data, ks=[5, 10, 25])
    assert set(result["by_category"]) == {q["category"] for q in data["questions"]}
    plain = result["plain_bm25"]
    for figures in [result["overall"], *result["by_category"].values(), plain["overall"]]:
        assert list(figures) == ["5", "10", "25"]
        assert 0 <= figures["5"] <= figures["10"] <= figures["25"] <= 1
    assert result["overall"]["10"] > 0.5
    assert Event.objects.count() == 0


def test_it_counts_a_found_and_a_missed_question_exactly():
    data = {
        "conversations": [
            {
                "id": "c1",
                "turns": [
                    {"id": "c1:D1:1", "ts": "2024-01-01T10:00:00", "speaker": "Ana", "text": "hi"},
                    {
                        "id": "c1:D1:2",
                        "ts": "2024-01-01T10:01:00",
                        "speaker": "Ben",
                        "text": "I adopted a tortoise called Sheldon",
                    },
                ],
            }
        ],
        "questions": [
            {
                "conversation": "c1",
                "question": "tortoise name?",
                "evidence": ["c1:D1:2"],
                "category": "single-hop",
            },
            {
                "conversation": "c1",
                "question": "giraffes",
                "evidence": ["c1:D1:1"],
                "category": "paraphrase",
            },
        ],
    }
    result = evaluate(data, ks=[1])
    found_and_missed = {
        "overall": {"1": 0.5},
        "by_category": {"paraphrase": {"1": 0.0}, "single-hop": {"1": 1.0}},
    }
    assert result == {**found_and_missed, "questions": 2, "plain_bm25": found_and_missed}


def _turn(turn_id: str, speaker: str, text: str) -> dict:
    return {"id": turn_id, "ts": "2024-01-01T10:00:00", "speaker": speaker, "text": text}


def _question(question: str, evidence: str, category: str) -> dict:
    return {
        "conversation": evidence.split(":")[0],
        "question": question,
        "evidence": [evidence],
        "category": category,
    }


def test_the_yardstick_is_plain_bm25_over_each_turn_alone_in_its_own_conversation():
    data = {
        "conversations": [
            {
                "id": "c1",
                "turns": [
                    _turn("c1:D1:1", "Ana", "Guess what, I adopted a tortoise."),
                    _turn("c1:D1:2", "Ben", "No way! What did you call him?"),
                    _turn("c1:D1:3", "Ana", "Sheldon, obviously."),
                ],
            },
            # Another conversation that says it louder, outside c1's pool.
            {"id": "c2", "turns": [_turn("c2:D1:1", "Cy", "Tortoise, tortoise: adopting one")]},
        ],
        "questions": [
            # Stemmed: "adopting" finds "adopted", and c2's turn, which says it word for word,
            # is not in c1's ranking.
            _question("Who was adopting one?", "c1:D1:1", "single-hop"),
            # The name's turn shares no word with the question, and each turn is read alone:
            # the turns around it, which do, lend it nothing.
            _question("What is the tortoise called?", "c1:D1:3", "paraphrase"),
            # No word at all: nothing found, no error from an empty match.
            _question("?!", "c2:D1:1", "temporal"),
        ],
    }
    assert plain_bm25(data, ks=[1, 3]) == {
        "overall": {"1": 0.3333, "3": 0.3333},
        "by_category": {
            "paraphrase": {"1": 0.0, "3": 0.0},
            "single-hop": {"1": 1.0, "3": 1.0},
            "temporal": {"1": 0.0, "3": 0.0},
        },
    }


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.pop("questions"), "'questions' must be a list"),
        (
            lambda d: d["questions"][0].update(evidence=["c1:D99:1"]),
            r"questions\[0\].evidence\[0\]",
        ),
        (lambda d: d["questions"][0].update(conversation="zz"), "no conversation 'zz'"),
        (lambda d: d["conversations"][0]["turns"][0].update(ts="soon"), "not an ISO date"),
    ],
)
def test_it_says_where_a_dataset_is_out_of_shape(change, message, small):
    change(small)
    with pytest.raises(DatasetError, match=message):
        dataset_check(small)
