"""The generated evaluation datasets: the same bytes every time, and every question's evidence
is the turn that states its fact."""

import hashlib
import re
from functools import cache

import pytest

from bench.evaluate import DatasetError, dataset_check
from bench.generate import DATASETS, dataset, dataset_write

pytestmark = pytest.mark.store_free

# The files the published figures were measured on, once committed (lens/eval/*.json): a change
# to the generator that changes them makes those figures another dataset's.
SHA256 = {
    "small": "ee0bf0440e802e624d3a98c437261bd92736e1cc83259729fbb897b32c0ddb33",
    "dev": "4f00bae79cbdd78a2f51b4c60c23152df424572555579a28b1e5dbbc4b28012b",
    "large": "154f5d5d6c301645c609fdbb01db074aad5b0d9f7afe6251a3681c1700c82583",
    "heldout": "fc5df3053fbc9fa4dc1520ae5289a2dfcf743d8eecc38e3aa4db977cf5fe947a",
    "heldout2": "6e78c96166c4a59586f07e72fcbac4cc5c89fb6d29a8048f48bcd6139dd75cdb",
    "heldout3": "b9480f9cdd2fc2a5da5aa3ab62ec07e01c0ca8ef147bcd95e277687aa4dadd52",
}


@cache
def _made(name: str) -> dict:
    """Made once for the module; tests that change a dataset make their own."""
    return dataset(**DATASETS[name])


@pytest.fixture(scope="module", params=list(DATASETS))
def named(request) -> tuple[str, dict]:
    return request.param, _made(request.param)


def test_it_writes_the_very_files_the_figures_were_measured_on(tmp_path):
    assert set(SHA256) == set(DATASETS)
    for name in DATASETS:
        data = dataset_write(name, directory=tmp_path)
        assert hashlib.sha256((tmp_path / f"{name}.json").read_bytes()).hexdigest() == SHA256[name]
        assert data == _made(name)


def test_every_evidence_turn_is_in_its_own_conversation_and_states_the_fact(named):
    _, data = named
    dataset_check(data)
    turns = {c["id"]: {t["id"]: t for t in c["turns"]} for c in data["conversations"]}
    for question in data["questions"]:
        own = turns[question["conversation"]]
        assert len(question["evidence_words"]) == len(question["evidence"]) >= 1
        for turn_id, words in zip(question["evidence"], question["evidence_words"], strict=True):
            turn = own[turn_id]
            assert words and all(word.casefold() in turn["text"].casefold() for word in words), (
                question,
                turn,
            )
            # The fact is about a person the question names, and that person says it.
            assert turn["speaker"] in question["question"], (question, turn)
            # No other turn of theirs (a later callback to the same fact) says it all.
            saying = [
                other["id"]
                for other in own.values()
                if other["speaker"] == turn["speaker"]
                and all(word.casefold() in other["text"].casefold() for word in words)
            ]
            assert saying == [turn_id], (question, saying)


def test_a_turn_id_names_one_turn_in_the_whole_dataset(named):
    _, data = named
    ids = [t["id"] for c in data["conversations"] for t in c["turns"]]
    assert len(ids) == len(set(ids))
    for conversation in data["conversations"]:
        assert all(t["id"].startswith(f"{conversation['id']}:") for t in conversation["turns"])


def test_the_reported_set_is_not_the_tuning_set():
    seeds = [options["seed"] for options in DATASETS.values()]
    assert len(seeds) == len(set(seeds))
    dev, large = _made("dev"), _made("large")
    dev_texts = {t["text"] for c in dev["conversations"] for t in c["turns"]}
    large_texts = [t["text"] for c in large["conversations"] for t in c["turns"]]
    assert sum(text in dev_texts for text in large_texts) < len(large_texts)


def _word_runs(text: str, length: int = 4) -> set[tuple[str, ...]]:
    words = re.findall(r"[\w']+", text.casefold())
    return {tuple(words[n : n + length]) for n in range(len(words) - length + 1)}


# Each held-out set against the sets made before it: the tuning set, and for the later held-out
# sets the earlier ones too (looked at since, so their wordings are no longer unseen).
@pytest.mark.parametrize(
    ("held_out", "earlier"),
    [
        ("heldout", "dev"),
        ("heldout2", "dev"),
        ("heldout2", "heldout"),
        ("heldout3", "dev"),
        ("heldout3", "heldout"),
        ("heldout3", "heldout2"),
    ],
)
def test_the_held_out_set_asks_in_wordings_and_of_facts_the_earlier_set_never_had(
    held_out, earlier
):
    seen, heldout = _made(earlier), _made(held_out)
    assert {q["category"] for q in heldout["questions"]} == {
        q["category"] for q in seen["questions"]
    }
    seen_runs = set().union(*(_word_runs(q["question"]) for q in seen["questions"]))
    for question in heldout["questions"]:
        assert not _word_runs(question["question"]) & seen_runs, question

    def fact_words(data: dict) -> set[str]:
        return {w.casefold() for q in data["questions"] for ws in q["evidence_words"] for w in ws}

    def speakers(data: dict) -> set[str]:
        return {t["speaker"] for c in data["conversations"] for t in c["turns"]}

    assert not fact_words(heldout) & fact_words(seen)
    assert not speakers(heldout) & speakers(seen)


def test_evidence_moved_to_a_filler_turn_is_refused():
    data = dataset(**DATASETS["small"])
    question = data["questions"][0]
    conversation = next(c for c in data["conversations"] if c["id"] == question["conversation"])
    filler = next(
        t["id"]
        for t in conversation["turns"]
        if not any(w.casefold() in t["text"].casefold() for w in question["evidence_words"][0])
    )
    question["evidence"] = [filler]
    with pytest.raises(DatasetError, match=r"questions\[0\]\.evidence\[0\]: .* does not say"):
        dataset_check(data)


def test_an_evidence_id_read_across_conversations_is_refused():
    data = dataset(**DATASETS["small"])
    first, second = data["conversations"][:2]
    second["turns"][0]["id"] = first["turns"][0]["id"]
    with pytest.raises(DatasetError, match="is used twice"):
        dataset_check(data)
