"""manage.py restore, end to end: real installations in their own processes."""

import json
import shutil
from pathlib import Path

from tests.transfer.installations import EVENT_IDS, checksums_hold, table


def test_it_restores_every_row_and_image_into_a_new_installation(installation, filled):
    source, folder = filled
    assert folder.parent.name == "backups" and folder.name.startswith("silentstar-")
    manifest = checksums_hold(folder)
    rows = source.rows()
    assert manifest["rows"] == {
        "events": len(table(rows, "heart_event")),
        "working_memory": len(table(rows, "gem_workingmemory")),
        "fragments": len(table(rows, "gem_fragment")),
        "summaries": len(table(rows, "mirror_summary")),
    }
    assert all(manifest["rows"].values())
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
    ids = json.loads(target.shell(EVENT_IDS))
    assert ids[:-2] == json.loads(source.shell(EVENT_IDS)) and ids[-2] == ids[-3] + 1
    assert f"`event:{ids[0]}`" in found and f"`event:{ids[-2]}`" in found


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
    before = target.rows()
    for damage in (altered, missing, from_a_newer_schema):
        copy = shutil.copytree(folder, tmp_path / damage.__name__)
        problem = damage(copy, json.loads((copy / "manifest.json").read_text()))

        refused = target.restore(copy)

        assert refused.returncode != 0 and problem in refused.stderr, damage.__name__
        assert target.rows() == before and target.images() == {}, damage.__name__
