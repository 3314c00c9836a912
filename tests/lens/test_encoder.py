"""The sentence encoder of the optional semantic search: its tokenizer, its weights, its vectors."""

import json
import struct
from pathlib import Path

import numpy as np
import pytest
from django.test import override_settings
from hypothesis import given, settings
from hypothesis import strategies as st
from threadpoolctl import ThreadpoolController

from lens.encoder import (
    MAX_TOKENS,
    Encoder,
    EncoderUnavailable,
    WordPiece,
    encoder,
    model_folder,
    safetensors_read,
)

REFERENCE = Path(__file__).parent / "data" / "wordpiece_reference.json"


@pytest.fixture(scope="module")
def wordpiece():
    return WordPiece.from_file(model_folder() / "tokenizer.json")


def test_the_tokenizer_gives_the_reference_ids_for_every_case(wordpiece):
    cases = json.loads(REFERENCE.read_text(encoding="utf-8"))["cases"]
    assert len(cases) > 100
    for case in cases:
        assert wordpiece.encode(case["text"]) == case["ids"], case["text"]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_the_tokenizer_frames_and_bounds_any_text(wordpiece, text):
    ids = wordpiece.encode(text)
    assert ids[0] == wordpiece.vocab["[CLS]"] and ids[-1] == wordpiece.vocab["[SEP]"]
    assert 2 <= len(ids) <= MAX_TOKENS
    assert all(0 <= token < len(wordpiece.vocab) for token in ids)


def test_a_word_the_vocabulary_cannot_cut_is_unknown():
    pieces = WordPiece({"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "play": 3, "##ing": 4, "a": 5})
    assert pieces.encode("Playing a playzz") == [1, 3, 4, 5, 0, 2]


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


def test_it_reads_a_safetensors_file(tmp_path):
    weights = np.arange(6, dtype=np.float32).reshape(2, 3)
    half = np.array([1.5, -2.0], dtype=np.float16)
    header = {
        "__metadata__": {"format": "pt"},
        "w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
        "h": {"dtype": "F16", "shape": [2], "data_offsets": [24, 28]},
    }
    raw = json.dumps(header).encode()
    path = tmp_path / "model.safetensors"
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + weights.tobytes() + half.tobytes())
    tensors = safetensors_read(path)
    assert set(tensors) == {"w", "h"}
    assert np.array_equal(tensors["w"], weights)
    assert tensors["h"].dtype == np.float32 and list(tensors["h"]) == [1.5, -2.0]


def test_it_refuses_a_tensor_type_it_cannot_read(tmp_path):
    raw = json.dumps({"b": {"dtype": "BOOL", "shape": [1], "data_offsets": [0, 1]}}).encode()
    path = tmp_path / "model.safetensors"
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\x01")
    with pytest.raises(EncoderUnavailable, match="tensor b has unsupported type BOOL"):
        safetensors_read(path)


def test_a_question_is_encoded_as_any_text():
    question = "Which string instrument has Theo taken up?"
    assert encoder().encode_question(question) == pytest.approx(encoder().encode([question])[0])


def test_a_configured_folder_without_a_model_is_named(tmp_path):
    with override_settings(SEARCH_SEMANTIC_MODEL=str(tmp_path)):
        assert model_folder() == tmp_path
        with pytest.raises(EncoderUnavailable, match=r"has no model\.safetensors"):
            Encoder(model_folder())
