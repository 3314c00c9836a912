"""The retrieval evaluation harness on the small generated dataset."""

import json
from pathlib import Path

import pytest

from heart.models import Event
from lens.evaluate import DatasetError, dataset_check, dataset_load, evaluate

pytestmark = pytest.mark.django_db(databases="__all__")

SMALL_PATH = Path(__file__).resolve().parents[2] / "lens" / "eval" / "small.json"


def test_it_measures_recall_at_k_by_category_and_leaves_nothing_behind():
    data = dataset_load(SMALL_PATH)
    result = evaluate(data, ks=[5, 10, 25])
    assert result["questions"] == len(data["questions"])
    assert set(result) == {"overall", "by_category", "questions"}
    assert set(result["by_category"]) == {q["category"] for q in data["questions"]}
    for figures in [result["overall"], *result["by_category"].values()]:
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
    assert result == {
        "overall": {"1": 0.5},
        "by_category": {"paraphrase": {"1": 0.0}, "single-hop": {"1": 1.0}},
        "questions": 2,
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
def test_it_says_where_a_dataset_is_out_of_shape(change, message):
    data = json.loads(SMALL_PATH.read_text(encoding="utf-8"))
    change(data)
    with pytest.raises(DatasetError, match=message):
        dataset_check(data)


def test_the_command_evaluates_in_throwaway_stores_and_writes_json(manage, tmp_path):
    out = tmp_path / "figures.json"
    done = manage("lens", "eval", str(SMALL_PATH), "--k", "5", "10", "--json", str(out))
    assert done.returncode == 0, done.stderr
    assert "overall" in done.stdout and "questions" in done.stdout
    figures = json.loads(out.read_text())
    assert list(figures["overall"]) == ["5", "10"]
    assert f"{figures['overall']['10']:.3f}" in done.stdout


def test_the_command_refuses_a_bad_dataset_clearly(manage, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"conversations": []}')
    done = manage("lens", "eval", str(bad))
    assert done.returncode != 0 and "'questions' must be a list" in done.stderr
