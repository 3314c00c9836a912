"""The installation's secret key when ``SILENTSTAR_SECRET_KEY`` does not give one.

It is generated once (``secrets``) into ``DATA_DIR/secret_key``, readable by its owner alone
(mode 0600), and read from there at every start, so sessions and the worker's signed tasks
outlive a restart. A backup carries the file and a restore puts it back (``transfer/backup.py``,
``transfer/restore.py``). The file is written whole beside its place and only then linked into
it, so two processes starting together read one whole key, the same one.
"""

import contextlib
import os
import secrets
import tempfile
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

KEY_FILE = "secret_key"
KEY_BYTES = 50  # secrets.token_urlsafe(50): 67 characters, as Django's deployment check wants


def secret_key_kept(folder: Path) -> str:
    """The key kept in ``folder``, generated and kept there first if it has none."""
    path = folder / KEY_FILE
    try:
        if not path.exists():
            folder.mkdir(parents=True, exist_ok=True)
            secret_key_write(path, secrets.token_urlsafe(KEY_BYTES))
        key = path.read_text().strip()
    except OSError as error:
        raise ImproperlyConfigured(
            f"Cannot keep the generated secret key in {path}: {error.strerror}. Make the data "
            "folder writable by this user, or set SILENTSTAR_SECRET_KEY."
        ) from None
    if not key:
        raise ImproperlyConfigured(
            f"{path} is empty: put back the secret key from a backup (or delete the file to "
            "generate a new one, which signs everyone out)."
        )
    return key


def secret_key_write(path: Path, key: str, *, replace: bool = False) -> None:
    """Keep ``key`` in ``path`` (mode 0600), unless a key is there already (with ``replace``,
    in its place). The file is whole before it takes its name."""
    descriptor, written = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")  # 0600
    try:
        with os.fdopen(descriptor, "w") as file:
            file.write(key + "\n")
            file.flush()
            os.fsync(file.fileno())
        if replace:
            os.replace(written, path)
            return
        # Another process may have kept its key first: then both read that one.
        with contextlib.suppress(FileExistsError):
            os.link(written, path)
    finally:
        Path(written).unlink(missing_ok=True)
