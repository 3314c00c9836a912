"""The sentence encoder of the optional semantic search: its tokenizer, its weights, its vectors
against the model's own library."""

import json
from pathlib import Path

import pytest
from django.test import override_settings
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import semantic_extra_required

semantic_extra_required()

import numpy as np  # noqa: E402  (the extra's own packages, only once it is known to be there)
from threadpoolctl import ThreadpoolController  # noqa: E402

from lens.encoder import MAX_TOKENS, Encoder, EncoderUnavailable, encoder, model_folder  # noqa: E402

# Made once with sentence-transformers on PyTorch (how: minilm_reference.py beside it).
REFERENCE = json.loads(
    (Path(__file__).parent / "data" / "minilm_reference.json").read_text(encoding="utf-8")
)


def test_its_vectors_are_the_model_libraries_own():
    vectors = encoder().encode(REFERENCE["texts"])
    expected = np.array(REFERENCE["vectors"], dtype=np.float32)
    assert vectors.shape == expected.shape
    assert np.abs(vectors - expected).max() < 1e-4
    assert (vectors * expected).sum(axis=1).min() > 0.99999


def test_its_tokens_are_the_model_tokenizers_own():
    tokenizer = encoder().tokenizer
    for text, ids in zip(REFERENCE["texts"], REFERENCE["token_ids"], strict=True):
        assert tokenizer.encode(text).ids == ids, text


@settings(max_examples=200)
@given(st.text(max_size=400))
def test_the_tokenizer_frames_and_bounds_any_text(text):
    tokenizer = encoder().tokenizer
    ids = tokenizer.encode(text).ids
    assert ids[0] == tokenizer.token_to_id("[CLS]") and ids[-1] == tokenizer.token_to_id("[SEP]")
    assert 2 <= len(ids) <= MAX_TOKENS
    assert all(0 <= token < tokenizer.get_vocab_size() for token in ids)


def test_vectors_are_unit_length_and_the_same_alone_or_in_a_batch():
    texts = [
        "ok",
        "Ha, my cello! First lesson with Dolores on Thursday. The neighbours will hate me.",
        "We ordered sushi again, nobody had the energy to cook.",
    ]
    together = encoder().encode(texts)
    alone = np.vstack([encoder().encode([text]) for text in texts])
    assert together.shape == (3, 384) and together.dtype == np.float32
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    assert np.allclose(together, alone, atol=1e-5)  # padding changes nothing
    assert encoder().encode([]).shape == (0, 384)


def test_it_encodes_on_one_blas_thread_and_leaves_the_setting_as_it_was(monkeypatch):
    model = encoder()
    controller = ThreadpoolController()

    def blas_threads() -> list[int]:
        return [pool["num_threads"] for pool in controller.select(user_api="blas").info()]

    during = []
    forward = model._forward

    def watched(batch):
        during.append(blas_threads())
        return forward(batch)

    monkeypatch.setattr(model, "_forward", watched)
    with controller.limit(limits=2, user_api="blas"):  # as on any machine of two cores or more
        before = blas_threads()
        assert before and set(before) == {2}  # NumPy's BLAS is loaded
        model.encode(["how was the race?"])
        assert during == [[1] * len(before)]
        assert blas_threads() == before


def test_a_question_is_nearer_its_answer_than_small_talk():
    question, answer, other = encoder().encode(
        [
            "Which string instrument has Theo taken up?",
            "Theo: Ha, my cello! First lesson with Dolores on Thursday.",
            "Theo: We ordered sushi again, nobody had the energy to cook.",
        ]
    )
    assert question @ answer > question @ other + 0.1


def test_a_question_is_encoded_as_any_text():
    question = "Which string instrument has Theo taken up?"
    assert encoder().encode_question(question) == pytest.approx(encoder().encode([question])[0])


def test_a_configured_folder_without_a_model_is_named(tmp_path):
    with override_settings(SEARCH_SEMANTIC_MODEL=str(tmp_path)):
        assert model_folder() == tmp_path
        with pytest.raises(EncoderUnavailable, match=r"has no model\.safetensors"):
            Encoder(model_folder())
