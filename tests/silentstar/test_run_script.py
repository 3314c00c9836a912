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
