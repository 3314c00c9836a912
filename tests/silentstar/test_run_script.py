"""scripts/run's own refusal, before it installs or starts anything."""

import os
import subprocess

import pytest

from tests.conftest import REPO


@pytest.mark.store_free
def test_it_refuses_to_serve_beyond_this_machine_with_debug_on(tmp_path):
    # A data folder that cannot be made: were the refusal missing, the script would stop there,
    # before migrating or starting a server.
    (tmp_path / "a file").write_text("")
    env = {
        **os.environ,
        "SILENTSTAR_HOST": "0.0.0.0",
        "SILENTSTAR_DEBUG": "True",
        "SILENTSTAR_DATA_DIR": str(tmp_path / "a file" / "data"),
    }
    done = subprocess.run(
        ["bash", "scripts/run"], cwd=REPO, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0
    assert done.stderr.startswith(
        "scripts/run: SILENTSTAR_HOST=0.0.0.0 is refused while SILENTSTAR_DEBUG is on, because "
        "debug pages show this machine's settings to anyone who reaches them"
    )
    assert done.stdout == ""  # nothing installed, migrated or started


@pytest.mark.store_free
@pytest.mark.parametrize(
    ("env", "said"),
    [
        (
            {"ANTHROPIC_API_KEY": "", "SILENTSTAR_LOCAL_BASE_URL": "http://localhost:11434"}
            | {"SILENTSTAR_LOCAL_MODEL": "qwen3:8b"},
            "local (ANTHROPIC_API_KEY is not set: the local model server at "
            "http://localhost:11434 answers, with qwen3:8b)",
        ),
        (
            {"ANTHROPIC_API_KEY": "", "SILENTSTAR_LOCAL_BASE_URL": ""},
            "offline (neither ANTHROPIC_API_KEY nor SILENTSTAR_LOCAL_BASE_URL is set: an offline "
            "companion answers)",
        ),
    ],
)
def test_its_start_up_line_says_who_answers(env, said):
    done = subprocess.run(
        ["bash", "scripts/companion"],
        cwd=REPO,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=10,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == said + "\n"
    assert '"Companion:  $(bash scripts/companion)"' in (REPO / "scripts" / "run").read_text()
