"""The retrieval evaluation harness: recall@k of ``lens.search.search`` on conversation datasets.

Dataset (JSON)::

    {"conversations": [{"id": "c1", "turns": [{"id": "c1:D1:3", "ts": "2023-05-08T13:56:00",
                                                "speaker": "Ana", "text": "…"}]}],
     "questions": [{"conversation": "c1", "question": "…", "evidence": ["c1:D1:3"],
                    "evidence_words": [["Lisbon", "pastries"]], "category": "temporal"}]}

Turn ids are unique in the whole dataset, so an evidence id names one turn wherever it is read.
``evidence_words`` (optional, one list per evidence id) are the words of the fact that turn
states: a dataset whose evidence turn lacks one of them is refused, so evidence can never point
at the wrong turn unnoticed.

Each conversation is written through the event log's own path (``heart.ingest.event_record``,
so the search triggers index it as they index every message), its questions are asked through
``search`` restricted to that conversation's events, and the transaction is rolled back: nothing
stays. A naive ``ts`` is read in the project's time zone.

recall@k of a question is the share of its evidence turns among the first k hits; the figures
are means over questions, overall and by category.

Beside them stands a yardstick, ``plain_bm25``: the same recall of plain BM25 over single turns
(the question's words against each turn alone). Published figures for conversational memory are
quoted against that baseline, so it says how hard a dataset is in the terms they use: a set on
which it finds most evidence asks in the turns' own words, one on which it finds little does not.
"""

import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from contextlib import closing
from datetime import datetime
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from bench.stores import stores_start
from heart.ingest import event_record
from lens.search import fts5_expression, search

DEFAULT_KS = (5, 10, 25)
STORE_URLS = (
    "DATABASE_URL",
    "EVENTS_DATABASE_URL",
    "SUMMARIES_DATABASE_URL",
    "SNAPSHOTS_DATABASE_URL",
)


class DatasetError(ValueError):
    """The dataset does not have the expected shape; the message says where."""


def dataset_load(path: Path) -> dict:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DatasetError(f"{path}: no such file") from None
    except json.JSONDecodeError as error:
        raise DatasetError(f"{path}: not JSON ({error})") from None
    dataset_check(data)
    return data


def dataset_check(data: object) -> None:
    """Raise ``DatasetError`` naming the first thing out of shape."""
    if not isinstance(data, dict):
        raise DatasetError("the dataset must be a JSON object")
    conversations = _list(data, "conversations", "the dataset")
    turns_of: dict[str, dict[str, str]] = {}
    seen: dict[str, str] = {}
    for n, conversation in enumerate(conversations):
        where = f"conversations[{n}]"
        cid = _text(conversation, "id", where)
        if cid in turns_of:
            raise DatasetError(f"{where}.id: {cid!r} is used twice")
        turns_of[cid] = {}
        for t, turn in enumerate(_list(conversation, "turns", where)):
            at = f"{where}.turns[{t}]"
            turn_id = _text(turn, "id", at)
            if turn_id in seen:
                raise DatasetError(f"{at}.id: {turn_id!r} is used twice (also in {seen[turn_id]})")
            seen[turn_id] = cid
            _text(turn, "speaker", at)
            if not isinstance(turn.get("text"), str):
                raise DatasetError(f"{at}.text: a string is needed")
            turns_of[cid][turn_id] = turn["text"]
            try:
                datetime.fromisoformat(_text(turn, "ts", at))
            except ValueError:
                raise DatasetError(f"{at}.ts: {turn['ts']!r} is not an ISO date and time") from None
    for n, question in enumerate(_list(data, "questions", "the dataset")):
        where = f"questions[{n}]"
        cid = _text(question, "conversation", where)
        if cid not in turns_of:
            raise DatasetError(f"{where}.conversation: no conversation {cid!r}")
        _text(question, "question", where)
        _text(question, "category", where)
        evidence = _list(question, "evidence", where)
        if not evidence:
            raise DatasetError(f"{where}.evidence: at least one turn id is needed")
        for e, turn_id in enumerate(evidence):
            if turn_id not in turns_of[cid]:
                raise DatasetError(f"{where}.evidence[{e}]: {turn_id!r} is not a turn of {cid}")
        if "evidence_words" in question:
            _evidence_words_check(question, turns_of[cid], where)


def _evidence_words_check(question: dict, texts: dict[str, str], where: str) -> None:
    """Each evidence turn holds every word of the fact it was meant to state."""
    lists = _list(question, "evidence_words", where)
    if len(lists) != len(question["evidence"]):
        raise DatasetError(f"{where}.evidence_words: one list per evidence turn is needed")
    for e, (turn_id, words) in enumerate(zip(question["evidence"], lists, strict=True)):
        if not isinstance(words, list) or not all(isinstance(w, str) and w for w in words):
            raise DatasetError(f"{where}.evidence_words[{e}]: a list of words is needed")
        text = texts[turn_id].casefold()
        if missing := [word for word in words if word.casefold() not in text]:
            raise DatasetError(
                f"{where}.evidence[{e}]: {turn_id!r} does not say {missing[0]!r} "
                f"(it says {texts[turn_id]!r})"
            )


def evaluate(data: dict, *, ks: Sequence[int] = DEFAULT_KS) -> dict:
    """recall@k overall and by category: ``{"overall": {"5": …}, "by_category": {…},
    "questions": N, "plain_bm25": {"overall": …, "by_category": …}}``."""
    dataset_check(data)
    ks = _ks(ks)
    recalls: list[tuple[str, dict[int, float]]] = []
    for conversation, questions in _asked(data):
        recalls += _conversation_recalls(conversation, questions, ks)
    return {**_summary(recalls, ks), "plain_bm25": _plain_bm25_summary(data, ks)}


def _conversation_recalls(conversation: dict, questions: list[dict], ks: list[int]):
    depth = max(ks)
    with transaction.atomic(using="events"):
        turn_of: dict[int, str] = {}
        for turn in conversation["turns"]:
            event, _ = event_record(
                text=turn["text"], actor=turn["speaker"], ts=moment_aware(turn["ts"]), identities=[]
            )
            turn_of[event.pk] = turn["id"]
        bounds = (min(turn_of), max(turn_of))
        if settings.SEARCH_SEMANTIC:
            from lens.semantic import vectors_fill  # NumPy and the model only when on

            vectors_fill(event_ids=bounds)
        results = []
        for question in questions:
            hits = search(
                question["question"],
                kinds=["event"],
                limit=min(depth, 100),
                event_ids=bounds,
                neighbours=0,
            )
            ranked = [turn_of[hit.id] for hit in hits]
            results.append((question["category"], _recall(question["evidence"], ranked, ks)))
        transaction.set_rollback(True, using="events")
    return results


# Any of the question's words: every one of them, as a plain bag-of-words baseline reads it.
_PLAIN_WORD_RE = re.compile(r"\w+")


def plain_bm25(data: dict, *, ks: Sequence[int] = DEFAULT_KS) -> dict:
    """The yardstick: recall@k of plain BM25 over single turns, overall and by category.

    Each question's words, any of them, ranked by FTS5's ``bm25`` over the turns of its own
    conversation, each turn alone: Porter stemming and nothing else (no neighbouring turns,
    dates, speakers or fusion). Each conversation is indexed in an in-memory
    SQLite of its own, apart from the stores and from ``search``, so the yardstick measures the
    dataset and never the search."""
    dataset_check(data)
    return _plain_bm25_summary(data, _ks(ks))


def _plain_bm25_summary(data: dict, ks: list[int]) -> dict:
    recalls: list[tuple[str, dict[int, float]]] = []
    for conversation, questions in _asked(data):
        recalls += _plain_bm25_recalls(conversation, questions, ks)
    summary = _summary(recalls, ks)
    return {"overall": summary["overall"], "by_category": summary["by_category"]}


def _plain_bm25_recalls(conversation: dict, questions: list[dict], ks: list[int]):
    with closing(sqlite3.connect(":memory:")) as index:
        index.execute(
            "CREATE VIRTUAL TABLE turn USING fts5(turn_id UNINDEXED, text, "
            "tokenize='porter unicode61')"
        )
        index.executemany(
            "INSERT INTO turn VALUES (?, ?)",
            [(turn["id"], turn["text"]) for turn in conversation["turns"]],
        )
        results = []
        for question in questions:
            words = dict.fromkeys(_PLAIN_WORD_RE.findall(question["question"].casefold()))
            ranked = []
            if words:  # a question of no word at all ("?!") finds nothing
                rows = index.execute(
                    "SELECT turn_id FROM turn WHERE turn MATCH ? ORDER BY bm25(turn) LIMIT ?",
                    [fts5_expression(list(words)), max(ks)],
                )
                ranked = [turn_id for (turn_id,) in rows]
            results.append((question["category"], _recall(question["evidence"], ranked, ks)))
    return results


def _asked(data: dict) -> list[tuple[dict, list[dict]]]:
    """Each conversation that has questions, with its questions."""
    asked: dict[str, list[dict]] = defaultdict(list)
    for question in data["questions"]:
        asked[question["conversation"]].append(question)
    return [(c, asked[c["id"]]) for c in data["conversations"] if c["id"] in asked]


def _ks(ks: Sequence[int]) -> list[int]:
    ks = sorted(set(ks))
    if not ks or ks[0] < 1:
        raise DatasetError("every k must be a whole number of at least 1")
    return ks


def _recall(evidence: Sequence[str], ranked: Sequence[str], ks: Sequence[int]) -> dict[int, float]:
    """The share of the evidence turns among the first k of ``ranked``, for each k."""
    wanted = set(evidence)
    return {k: len(wanted & set(ranked[:k])) / len(wanted) for k in ks}


def _summary(recalls: list[tuple[str, dict[int, float]]], ks: list[int]) -> dict:
    def means(rows: list[dict[int, float]]) -> dict[str, float]:
        return {str(k): round(sum(row[k] for row in rows) / len(rows), 4) for k in ks}

    by_category: dict[str, list[dict[int, float]]] = defaultdict(list)
    for category, row in recalls:
        by_category[category].append(row)
    return {
        "overall": means([row for _, row in recalls]) if recalls else {str(k): 0.0 for k in ks},
        "by_category": {category: means(rows) for category, rows in sorted(by_category.items())},
        "questions": len(recalls),
    }


def evaluate_in_throwaway_stores(*, path: Path, ks: Sequence[int], semantic_on: bool) -> dict:
    """Run ``python -m bench eval … --here`` in a new process on fresh SQLite stores, with the
    semantic search on or off."""
    with tempfile.TemporaryDirectory(prefix="silentstar-eval-") as data_dir:
        env = {
            **os.environ,
            **dict.fromkeys(STORE_URLS, ""),
            "SILENTSTAR_DATA_DIR": data_dir,
            "SILENTSTAR_LOG_LEVEL": "WARNING",
            "SILENTSTAR_SEARCH_SEMANTIC": "true" if semantic_on else "false",
        }
        stores_start(Path(data_dir))
        command = [sys.executable, "-m", "bench", "eval", str(Path(path).resolve())]
        command += ["--k", *map(str, ks), "--here", "--migrate"]
        done = subprocess.run(
            command, cwd=settings.BASE_DIR, env=env, stdout=subprocess.PIPE, text=True
        )
        if done.returncode != 0:
            raise RuntimeError(f"the evaluation failed ({' '.join(command)})")
        return json.loads(done.stdout.strip().splitlines()[-1])


def moment_aware(ts: str) -> datetime:
    """A dataset's ISO time, in the installation's zone when it names none."""
    moment = datetime.fromisoformat(ts)
    return moment if timezone.is_aware(moment) else timezone.make_aware(moment)


def _list(item: object, name: str, where: str) -> list:
    value = item.get(name) if isinstance(item, dict) else None
    if not isinstance(value, list):
        raise DatasetError(f"{where}: {name!r} must be a list")
    return value


def _text(item: object, name: str, where: str) -> str:
    value = item.get(name) if isinstance(item, dict) else None
    if not isinstance(value, str) or not value.strip():
        raise DatasetError(f"{where}.{name}: a non-empty string is needed")
    return value
