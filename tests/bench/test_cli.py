"""``python -m bench``: its commands from the terminal."""

import json

import pytest

from bench.cli import main

pytestmark = pytest.mark.store_free


def test_eval_evaluates_in_throwaway_stores_and_writes_json(bench, small_path, tmp_path):
    out = tmp_path / "figures.json"
    done = bench("eval", str(small_path), "--k", "5", "10", "--json", str(out))
    assert done.returncode == 0, done.stderr
    assert "overall" in done.stdout and "questions" in done.stdout
    figures = json.loads(out.read_text())
    assert list(figures["overall"]) == ["5", "10"]
    # The search's figures, then the yardstick's, on one line.
    overall = next(line for line in done.stdout.splitlines() if line.startswith("overall"))
    searched, plain = figures["overall"], figures["plain_bm25"]["overall"]
    assert overall.split()[1:] == [
        f"{row[k]:.3f}" for row in (searched, plain) for k in ("5", "10")
    ]
    assert "plain BM25 over single turns" in done.stdout


def test_eval_refuses_a_bad_dataset_clearly(bench, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"conversations": []}')
    done = bench("eval", str(bad))
    assert done.returncode == 1 and "'questions' must be a list" in done.stderr


def test_eval_refuses_semantic_with_here(capsys, small_path):
    assert main(["eval", str(small_path), "--here", "--semantic", "on"]) == 1
    assert "SILENTSTAR_SEARCH_SEMANTIC" in capsys.readouterr().err


def test_generate_writes_the_named_datasets_to_the_folder_given(capsys, tmp_path):
    assert main(["generate", "small", "dev", "--out", str(tmp_path / "eval")]) == 0
    assert sorted(path.name for path in (tmp_path / "eval").iterdir()) == ["dev.json", "small.json"]
    assert "small.json: 2 conversations, 287 turns, 33 questions" in capsys.readouterr().out


def test_generate_refuses_a_name_it_does_not_make(capsys, tmp_path):
    assert main(["generate", "huge", "--out", str(tmp_path)]) == 1
    assert "no dataset 'huge'" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())
