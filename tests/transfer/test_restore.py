"""manage.py restore, end to end: real installations in their own processes."""

import json
import shutil
import stat
from pathlib import Path

from tests.transfer.installations import (
    Installation,
    checksums_hold,
    manifest_fix,
    overwrite_middle,
    table,
)


def test_it_restores_every_row_and_image_into_a_new_installation(installation, filled):
    source, folder = filled
    assert folder.parent.name == "backups" and folder.name.startswith("silentstar-")
    manifest = checksums_hold(folder)
    rows = source.rows_kept
    assert manifest["rows"] == {
        "events": len(table(rows, "heart_event")),
        "working_memory": len(table(rows, "gem_workingmemory")),
        "fragments": len(table(rows, "gem_fragment")),
        "summaries": len(table(rows, "mirror_summary")),
    }
    assert all(manifest["rows"].values()) and table(rows, "ledger_modelcall")
    assert [name for name in manifest["schema"] if name in {"heart", "gem", "mirror", "lens"}]

    target = installation("target")
    restored = target.restore(folder)
    assert restored.returncode == 0, restored.stderr
    assert target.rows() == rows
    assert target.images() == source.images() != {}

    # The search finds the restored events, and a new turn's events get new ids.
    said = target.manage("turn", "the lighthouse again", "--as", "luna")
    assert said.returncode == 0, said.stderr
    found = target.manage("lens", "search", "lighthouse").stdout
    ids = target.event_ids()
    assert ids[:-2] == source.event_ids() and ids[-2] == ids[-3] + 1
    assert f"`event:{ids[0]}`" in found and f"`event:{ids[-2]}`" in found


def test_it_puts_back_the_secret_key_the_backup_carries(installation, filled):
    source, folder = filled
    target = installation("target")
    kept = target.data / "secret_key"
    kept.write_text("the new installation's own key\n")

    restored = target.restore(folder)

    assert restored.returncode == 0, restored.stderr
    assert kept.read_bytes() == (source.data / "secret_key").read_bytes()
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600


def test_it_puts_back_the_key_that_signs_notifications(installation, tmp_path):
    """The devices' subscriptions restored name the source's public key: a target's own key,
    made before, would have every notification refused."""
    source, target = installation("source"), installation("target")
    made = "from heart.push import push_public_key; print(push_public_key())"
    source_key = source.shell(made)
    assert target.shell(made) != source_key

    restored = target.restore(source.backup(tmp_path / "backups"))

    assert restored.returncode == 0, restored.stderr
    assert "push_key.pem: the key that signs the notifications" in restored.stdout
    assert target.shell(made) == source_key
    assert stat.S_IMODE((target.data / "push_key.pem").stat().st_mode) == 0o600


def test_it_restores_only_into_an_empty_installation(installation, filled):
    _, folder = filled
    other = installation("other")
    other.shell("from gem.models import Fragment; Fragment.objects.create(key='mine')")
    before = other.rows()

    refused = other.restore(folder)

    assert refused.returncode != 0
    assert "not empty (fragments: 1)" in refused.stderr
    assert other.rows() == before and other.images() == {}


def altered(copy: Path, manifest: dict) -> str:
    name = manifest["databases"][-1]["name"]
    data = bytearray((copy / name).read_bytes())
    data[len(data) // 2] ^= 0xFF
    (copy / name).write_bytes(bytes(data))
    return f"{name} fails its checksum"


def missing(copy: Path, manifest: dict) -> str:
    name = manifest["files"][0]["name"]
    (copy / name).unlink()
    return f"incomplete: {name} is missing"


def from_a_newer_schema(copy: Path, manifest: dict) -> str:
    manifest["schema"]["heart"] = "9999_from_the_future"
    (copy / "manifest.json").write_text(json.dumps(manifest))
    return "schema is newer than this code (migrations it does not have: heart 9999_from_the_future"


def test_it_refuses_a_damaged_backup_and_changes_nothing(installation, filled, tmp_path):
    _, folder = filled
    target = installation("target")
    before = target.set_up_rows
    for damage in (altered, missing, from_a_newer_schema):
        copy = shutil.copytree(folder, tmp_path / damage.__name__)
        problem = damage(copy, json.loads((copy / "manifest.json").read_text()))

        refused = target.restore(copy)

        assert refused.returncode != 0 and problem in refused.stderr, damage.__name__
        assert target.rows() == before and target.images() == {}, damage.__name__


def store_damaged(copy: Path) -> None:
    """4 KiB overwritten in the middle of the events store's file, the manifest made to match."""
    manifest = json.loads((copy / "manifest.json").read_text())
    (entry,) = [entry for entry in manifest["databases"] if "events" in entry["aliases"]]
    overwrite_middle(copy / entry["name"])
    manifest_fix(copy, entry["name"])


def rows_miscounted(copy: Path) -> None:
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["rows"]["fragments"] += 1
    (copy / "manifest.json").write_text(json.dumps(manifest))


def test_it_refuses_a_damaged_store_or_a_wrong_count_and_a_good_backup_follows(
    installation, filled, tmp_path
):
    source, folder = filled
    target = installation("target")
    before = target.set_up_rows
    for damage in (store_damaged, rows_miscounted):
        copy = shutil.copytree(folder, tmp_path / damage.__name__)
        damage(copy)

        refused = target.restore(copy)

        assert refused.returncode != 0, damage.__name__
        assert "Restore refused: " in refused.stderr and "Traceback" not in refused.stderr
        assert target.rows() == before and target.images() == {}, damage.__name__
        assert not (target.data / "transfer-undo").exists()

    restored = target.restore(folder)
    assert restored.returncode == 0, restored.stderr
    assert target.rows() == source.rows_kept


def test_a_restore_failing_part_way_puts_everything_back(installation, filled):
    source, folder = filled
    target = installation("target")
    before = target.set_up_rows
    # A file where the images' folder goes: the stores are restored, then the first image
    # cannot be written.
    (target.data / "media").mkdir(exist_ok=True)
    (target.data / "media" / "images").write_bytes(b"in the way")

    failed = target.restore(folder)

    assert failed.returncode != 0 and "Traceback" not in failed.stderr
    assert "could not be written" in failed.stderr
    assert "The restore failed: the installation is as it was before it." in failed.stdout
    assert target.rows() == before
    assert (target.data / "media" / "images").read_bytes() == b"in the way"
    assert not (target.data / "transfer-undo").exists()

    (target.data / "media" / "images").unlink()
    restored = target.restore(folder)
    assert restored.returncode == 0, restored.stderr
    assert target.rows() == source.rows_kept and target.images() == source.images()


def test_it_restores_into_an_installation_never_migrated(filled, tmp_path, postgres_databases):
    source, folder = filled
    urls = {"DATABASE_URL": postgres_databases.create()} if postgres_databases else {}
    target = Installation(tmp_path / "new", urls)

    restored = target.restore(folder)

    assert restored.returncode == 0, restored.stderr
    assert target.rows() == source.rows_kept and target.images() == source.images()
