"""The secret key kept in the data folder (silentstar/secret_key.py)."""

import stat
import threading

import pytest
from django.core.exceptions import ImproperlyConfigured

from silentstar.secret_key import KEY_FILE, secret_key_kept, secret_key_write

pytestmark = pytest.mark.store_free


def test_it_generates_one_key_when_processes_start_together(tmp_path):
    folder = tmp_path / "data"
    starting = threading.Barrier(8)
    keys = []

    def start():
        starting.wait()
        keys.append(secret_key_kept(folder))

    threads = [threading.Thread(target=start) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(keys) == 8 and len(set(keys)) == 1 and len(keys[0]) >= 50
    assert [path.name for path in folder.iterdir()] == [KEY_FILE]  # no half-written file left
    assert stat.S_IMODE((folder / KEY_FILE).stat().st_mode) == 0o600
    assert secret_key_kept(folder) == keys[0]


def test_it_replaces_a_key_only_when_asked(tmp_path):
    path = tmp_path / KEY_FILE
    secret_key_write(path, "the first key")
    secret_key_write(path, "a second key")
    assert secret_key_kept(tmp_path) == "the first key"
    secret_key_write(path, "the restored key", replace=True)
    assert secret_key_kept(tmp_path) == "the restored key"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_it_refuses_an_empty_key_file_in_words(tmp_path):
    (tmp_path / KEY_FILE).write_text("\n")
    with pytest.raises(ImproperlyConfigured, match="secret_key is empty: put back the secret key"):
        secret_key_kept(tmp_path)
