"""manage.py export and import, end to end: real installations in their own processes, on the
backend the suite runs on (the installations of tests.transfer.test_backup), and the documentation
of every exported field."""

import hashlib
import json
import re
import shutil
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path

import pytest
from django.apps import apps
from django.db import connections, router

from events.models import Turn
from gem.models import Fragment
from heart.models import PushDelivery, PushSubscription
from ledger.models import ModelCall
from tests.conftest import REPO
from tests.transfer import installations
from transfer.backup import installation_rows
from transfer.portable import INSIDE, KINDS, MANIFEST, PortableError, portable_import

# A record of every kind, each field away from its default where it has one.
FILL = """
from datetime import UTC, datetime, timedelta
from django.contrib.auth import get_user_model
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from gem.models import (AmbientProse, Fragment, FragmentEdge, FragmentSource, Identity,
                        MiraEntry, State, WakeText)
from gem.archive import archive_run
from gem.services import WorkingMemoryRecorded, working_memory_create, working_memory_status_set
from events.models import Event, EventTag, Turn
from heart.models import ContextSnapshot
from heart.services import turn_submit
from ledger.models import ModelCall
from mirror.models import MirrorPrompt, MirrorRun, Summary, TagSuggestion
from compass.models import CompassPrompt, Consultation, Proposal
from loom.models import InboxImage, LoomCall, LoomPrompt, Session, SessionImage

owner = get_user_model().objects.get()
image = default_storage.save('images/2026/11/photo.png', ContentFile(bytes(range(256)) * 40))
Fragment.objects.create(key='lighthouse', ambient='A white tower on the point.',
                        recognition='Zoë keeps it ☕', inventory='Built in 1871.',
                        triggers=['the white tower', " Zoë's light "])
Fragment.objects.create(key='keeper', ambient='Zoë.')
turn_submit(text='<luna>look, the lighthouse <pin>tea without sugar</pin></luna>', actor='luna',
            image=image)
turn_submit(text='<luna>and its keeper <plan>visit the lighthouse on friday</plan></luna>',
            actor='luna')
from heart.corrections import correction_make
taken_back = Event.objects.create(actor='luna', content='<luna>the vault word is zanzibar</luna>')
correction_make(event_id=taken_back.pk, kind='edit', text='<luna>the vault word is oak</luna>',
                made_by=owner.username)
correction_make(event_id=taken_back.pk, kind='retraction', made_by=owner.username)
pasted = Event.objects.create(actor='luna', content='<luna>my password is hunter22</luna>')
correction_make(event_id=pasted.pk, kind='retraction', made_by=owner.username)
from heart.corrections import event_purge
event_purge(event_id=pasted.pk, purged_by=owner.username)
from gem.services import words_forget
words_forget([('pin', 'the old alarm code', 'working memory #99')], by=owner.username)
ids = sorted(Event.objects.values_list('id', flat=True))
from events.models import Nudge
from heart.services import turn_first_queue
nudge = Nudge.objects.create(reason='silence', thing=f'silence after event {ids[1]}',
                             said='luna has not written for 3 days.', status='sent',
                             decided_at=datetime(2026, 11, 21, 9, tzinfo=UTC))
turn_first_queue(nudge_id=nudge.pk)
assert EventTag.objects.exists() and Turn.objects.exists() and ContextSnapshot.objects.exists()
FragmentEdge.objects.create(source_id='keeper', target_id='lighthouse', relation='keeps')
FragmentSource.objects.create(fragment_id='lighthouse', event_id=ids[0])
now = datetime(2026, 11, 20, 9, 30, 15, 123456, tzinfo=UTC)
first = working_memory_create(type='thought', content='the keeper waves from the lighthouse',
                              actor='claude', at=now, turn=1).item
working_memory_create(type='thought', content='the keeper is waving from the lighthouse again',
                      actor='claude', at=now, turn=1, recorded=WorkingMemoryRecorded(
                          created_at=now, refreshed_at=now, near_duplicate_of=first.pk,
                          fragment_keys=('keeper', 'lighthouse'), source_event_ids=tuple(ids[:2]),
                          importance=0.75, valence=-0.25, importance_edited=True))
for status in ('resolved', 'dropped', 'decayed'):
    item = working_memory_create(type='pin', content=f'a {status} pin', actor='luna', at=now,
                                 turn=2).item
    working_memory_status_set(item_ids=[item.pk], status=status, reason='test', now=now)
# The three pins no longer active, idle for a year, move to the archive: exported all the same.
assert len(archive_run(now=now + timedelta(days=365)).archived) == 3
AmbientProse.objects.create(content='The [lighthouse] stands.', author=owner)
WakeText.objects.create(kind='wake', content='Wake gently.', author=owner)
Identity.objects.create(name='mira', side='companion', color='#123abc')
State.objects.create(key='export test', value='{"b": 1}')
run = MirrorRun.objects.create(kind='manual', route='two-pass', status='done', completed_at=now,
                               first_event_id=ids[0], last_event_id=ids[-1],
                               usage={'summarise': {'tokens': 5, 'calls': 1}}, progress={})
older = Summary.objects.create(level='L0', first_event_id=ids[0], last_event_id=ids[1],
                               content='They talked about the lighthouse.', tokens=7, run=run)
merged = Summary.objects.create(level='L1', first_event_id=ids[0], last_event_id=ids[-1],
                                content='A lighthouse and its keeper.', tokens=6)
Summary.objects.filter(pk=older.pk).update(superseded_by=merged)
TagSuggestion.objects.create(summary=merged, type='desc', content='the keeper is kind',
                             subject='keeper', status='promoted', promoted_wm_id=first.pk,
                             decided_at=now + timedelta(hours=1))
MirrorPrompt.objects.create(kind='clean', content='Clean it.', author=owner.username)
asked = Consultation.objects.create(question='What should this week hold?', status='done',
                                    reasoning='A walk.', reply='A walk. []',
                                    asked_by=owner.username, model='offline', web_search=True,
                                    attempts=1, started_at=now, finished_at=now)
walk = TagSuggestion.objects.create(proposer='compass', type='plan', content='a walk by the sea',
                                    due=now + timedelta(days=3), hidden=True, reason='fresh air')
Proposal.objects.create(consultation=asked, suggestion=walk, position=0)
CompassPrompt.objects.create(kind='review', content='Review it.', author=owner.username)
session = Session.objects.create(topic='the lighthouse wardrobe', status='closed', closed_at=now)
session.fragments.add('lighthouse')
InboxImage.objects.create(image=default_storage.save('loom/inbox/coat.png', ContentFile(b'coat')),
                          original_name='coat.png')
shelf = SessionImage.objects.create(
    session=session, image=default_storage.save('loom/sessions/1/shelf.png', ContentFile(b'shelf')),
    original_name='shelf.png', uploaded_at=now)
call = LoomCall.objects.create(session=session, agent='cataloguer', fragment_key='lighthouse',
                               question='What is on the shelf?', status='done', notes='A lamp.',
                               draft='# lighthouse', sources={'fragment': 'lighthouse'},
                               draft_state='applied', decided_by=owner, decided_at=now,
                               suggestion_ids=[walk.pk], started_at=now,
                               finished_at=now, attempts=1, applied_text='# lighthouse',
                               error='none')
call.images.add(shelf)
LoomPrompt.objects.create(kind='weaver', content='Weave it.', author=owner)
from transfer.models import ImportedMemory, ImportedMessage, ImportedProposal, ImportRun
arrived = ImportRun.objects.create(format='sillytavern', file_name='chat.jsonl',
                                   file_sha256='ab' * 32, user=owner, finished_at=now,
                                   counts={'events': 1}, status='done',
                                   speakers={'Luna': 'luna'}, error='')
ImportedProposal.objects.create(kind='draft', digest='cd' * 32, run=arrived, title='1 fragment',
                                text='# keeper', kept={'entries': {'entries.0': {'uid': 0}}},
                                state='applied', applied_text='# keeper\\n', decided_at=now,
                                decided_by=owner)
ImportedMessage.objects.create(event_id=ids[0], origin='0123abcd:2', run_id=arrived.pk,
                               speaker='Luna',
                               kept={'swipes': ['a', 'b'], 'swipe_id': 1})
remembered = TagSuggestion.objects.create(proposer='import', type='pin', content='green tea',
                                          reason='Remembered in mem0 memories (mem0:m-1)')
ImportedMemory.objects.create(suggestion=remembered, origin='mem0:m-1', run_id=arrived.pk,
                              kept={'hash': 'h1'})
MiraEntry.objects.create(mira_id='mem_045', working_memory=first, event_id=ids[0],
                         entry={'id': 'mem_045', 'type': 'thought', 'z': [1, 2], 'a': None},
                         written={'content': first.content})
ModelCall.objects.create(ts=now, component='heart', model='claude-opus-5-5', offline=True,
                         input_tokens=1200, output_tokens=40, cache_read_tokens=900,
                         cache_write_5m_tokens=200, cache_write_1h_tokens=100, web_searches=2)
"""
COUNTS = """
import json
from gem.archive_store import archive_read
from transfer.portable import KINDS
counts = {kind.file: kind.model._base_manager.count() for kind in KINDS}
counts['working_memory.jsonl'] += len(archive_read())
print(json.dumps(counts))
"""


def files_of(folder: Path) -> dict[str, bytes]:
    """Every file of an export by its name, the manifest without the moment it was written."""
    found = {
        str(path.relative_to(folder)): path.read_bytes()
        for path in folder.rglob("*")
        if path.is_file()
    }
    manifest = json.loads(found.pop(MANIFEST))
    manifest.pop("exported_at")
    found[MANIFEST] = json.dumps(manifest).encode()
    return found


@pytest.fixture(scope="module")
def exported(tmp_path_factory, set_up_installations, postgres_databases):
    """An installation holding ``FILL`` and its export, made once for the tests that only read
    them: ``(source, export folder)``."""
    folder = tmp_path_factory.mktemp("exported")
    source = installations.installation_copy(
        set_up_installations(False), folder / "source", postgres_databases
    )
    source.shell(FILL)
    done = source.manage("export", str(folder / "export"))
    assert done.returncode == 0, done.stderr
    return source, folder / "export"


def test_it_exports_imports_and_exports_the_same_files(installation, exported, tmp_path):
    source, first = exported
    counts = json.loads(source.shell(COUNTS))
    assert all(counts.values()), counts  # every kind of record is in the test

    target = installation("target")
    imported = target.manage("import", str(first))
    assert imported.returncode == 0, imported.stderr
    assert re.search(r"Replaced this installation's \d+ rows? of identities.jsonl", imported.stdout)
    second = tmp_path / "second"
    assert target.manage("export", str(second)).returncode == 0

    assert files_of(second) == files_of(first)
    assert json.loads(target.shell(COUNTS)) == counts
    assert target.images() == source.images() != {}
    events = [json.loads(line) for line in (first / "events.jsonl").read_text().splitlines()]
    assert events[0]["image"] == "images/2026/11/photo.png" and events[0]["tags"]
    assert "Zoë keeps it ☕" in (first / "fragments.jsonl").read_text(encoding="utf-8")
    lighthouse = json.loads((first / "fragments.jsonl").read_text().splitlines()[1])
    assert lighthouse["triggers"] == ["the white tower", " Zoë's light "]

    # The search indexes are made again by their triggers, and new rows get new ids.
    found = target.manage("lens", "search", "lighthouse").stdout
    assert f"`event:{events[0]['id']}`" in found
    # The corrections came with the log, and what they took back is not found again.
    kinds = [json.loads(line)["kind"] for line in (first / "corrections.jsonl").open()]
    assert kinds == ["edit", "retraction", "retraction"]
    assert "zanzibar" in (first / "events.jsonl").read_text(encoding="utf-8")
    assert "hunter22" not in (first / "events.jsonl").read_text(encoding="utf-8")  # purged
    for word in ("zanzibar", "vault"):
        assert "event:" not in target.manage("lens", "search", word).stdout
    said = target.manage("turn", "the lighthouse again", "--as", "luna")
    assert said.returncode == 0, said.stderr
    ids = json.loads(target.shell(installations.EVENT_IDS))
    assert ids[-2] == events[-1]["id"] + 1


def test_it_imports_only_into_an_empty_installation(installation, tmp_path):
    source = installation("source")
    source.shell(FILL)
    before = source.rows()
    assert source.manage("export", str(tmp_path / "export")).returncode == 0

    refused = source.manage("import", str(tmp_path / "export"))

    assert refused.returncode != 0
    assert "this installation is not empty (events: " in refused.stderr
    assert source.rows() == before


@pytest.mark.django_db(databases="__all__")
@pytest.mark.parametrize("linked", ["events.jsonl", "images", MANIFEST])
def test_it_refuses_a_symbolic_link_in_the_export(exported, tmp_path, linked):
    """A link could bring any file of the machine into the installation (an image is served
    to whoever signs in), even with its checksum right."""
    _, folder = exported
    copy = shutil.copytree(folder, tmp_path / "export")
    outside = tmp_path / "outside"
    outside.mkdir()
    (copy / linked).rename(outside / linked)
    (copy / linked).symlink_to(outside / linked)

    with pytest.raises(PortableError, match="symbolic link: an export holds its own files only"):
        portable_import(folder=copy)
    assert installation_rows() == dict.fromkeys(installation_rows(), 0)


@pytest.mark.django_db(databases="__all__")
def test_it_refuses_a_malformed_file_naming_the_line_and_field(installation, exported, tmp_path):
    """The export of a real installation, each copy damaged in one place: the command refuses
    the first, naming it, and writes nothing; the rest go to the import itself, here, in an
    empty installation (the test's own stores), with the same words."""
    _, folder = exported
    target = installation("target")
    before = target.rows()

    def rewritten(name: str, change) -> Path:
        copy = shutil.copytree(folder, tmp_path / f"{name}-{len(list(tmp_path.iterdir()))}")
        lines = (copy / name).read_text(encoding="utf-8").splitlines(keepends=True)
        lines[1] = change(lines[1])
        (copy / name).write_text("".join(lines), encoding="utf-8")
        manifest = json.loads((copy / MANIFEST).read_text())
        for entry in manifest["files"]:
            if entry["name"] == name:
                entry["sha256"] = hashlib.sha256((copy / name).read_bytes()).hexdigest()
        (copy / MANIFEST).write_text(json.dumps(manifest))
        return copy

    def without(field: str):
        return lambda line: (
            json.dumps({k: v for k, v in json.loads(line).items() if k != field}) + "\n"
        )

    def with_value(field: str, value):
        return lambda line: json.dumps({**json.loads(line), field: value}) + "\n"

    cases = {
        "events.jsonl line 2: not JSON": rewritten("events.jsonl", lambda line: line[:-5] + "\n"),
        "events.jsonl line 2, field “ts”: is missing": rewritten("events.jsonl", without("ts")),
        "turns.jsonl line 2, field “attempts”: must be a whole number": rewritten(
            "turns.jsonl", with_value("attempts", "2")
        ),
        "working_memory.jsonl line 2, field “status”: 'asleep' is not one of": rewritten(
            "working_memory.jsonl", with_value("status", "asleep")
        ),
        "fragments.jsonl line 2, field “created_at”": rewritten(
            "fragments.jsonl", with_value("created_at", "2026-11-20 09:30")
        ),
        "fragments.jsonl line 2, field “triggers”: The triggers “sea” and “SEA” are the same "
        "words": rewritten("fragments.jsonl", with_value("triggers", ["sea", "SEA"])),
        "identities.jsonl line 2, field “moon”: is not a field": rewritten(
            "identities.jsonl", with_value("moon", 1)
        ),
        "identities.jsonl line 2, field “id”: 9223372036854775807 is out of range (ids run "
        "from 1 to 2,147,483,647)": rewritten("identities.jsonl", with_value("id", 2**63 - 1)),
        "turns.jsonl line 2, field “event”: 0 is out of range": rewritten(
            "turns.jsonl", with_value("event", 0)
        ),
        "turns.jsonl line 2, field “event”: 999999 is not in events.jsonl": rewritten(
            "turns.jsonl", with_value("event", 999999)
        ),
        # PostgreSQL cannot store NUL, in text or in JSON: refused on SQLite too.
        "events.jsonl line 2, field “content”: holds a NUL character (\\x00)": rewritten(
            "events.jsonl", with_value("content", "look\x00")
        ),
        "events.jsonl line 2, field “tags”: holds a tag that holds a NUL character": rewritten(
            "events.jsonl", with_value("tags", ["say\x00"])
        ),
        "snapshots.jsonl line 2, field “token_counts”: holds a NUL character": rewritten(
            "snapshots.jsonl", with_value("token_counts", {"pool\x00": 1})
        ),
        "events.jsonl line 2, field “content”: is 200,001 characters long; at most 200,000 "
        "are imported": rewritten("events.jsonl", with_value("content", "w" * 200_001)),
        "identities.jsonl line 2, field “name”: is 41 characters long; at most 40 are imported": (
            rewritten("identities.jsonl", with_value("name", "n" * 41))
        ),
        "events.jsonl line 2: nested too deeply": rewritten(
            "events.jsonl", lambda line: '{"ts": ' + "[" * 10_000 + "]" * 10_000 + "}\n"
        ),
        "events.jsonl line 2: longer than 4,000,000 characters": rewritten(
            "events.jsonl", with_value("content", "w" * 4_000_001)
        ),
    }
    damaged = shutil.copytree(folder, tmp_path / "damaged")
    (damaged / "state.jsonl").write_text("{}\n")
    cases["state.jsonl differs from its SHA-256"] = damaged

    (problem, copy), *others = cases.items()
    refused = target.manage("import", str(copy))
    assert refused.returncode != 0 and problem in refused.stderr, (problem, refused.stderr)
    assert target.rows() == before and target.images() == {}, problem

    empty = installation_rows()
    for problem, copy in others:
        with pytest.raises(PortableError) as refused:
            portable_import(folder=copy, progress=lambda line: None)
        assert problem in str(refused.value), (problem, str(refused.value))
        assert installation_rows() == empty, problem


def doc_sections() -> dict[str, str]:
    """docs/export.md's text under each heading that names a file (### `events.jsonl`)."""
    text = (REPO / "docs" / "export.md").read_text(encoding="utf-8")
    parts = re.split(r"^###\s+`([^`]+)`\s*$", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_every_exported_field_is_documented():
    sections = doc_sections()
    undocumented = [
        f"{kind.file} {name}"
        for kind in KINDS
        for name in kind.fields
        if f"| `{name}` |" not in sections.get(kind.file, "")
    ]
    assert undocumented == []


# Kept with the installation and its backups, never exported: the devices told when she writes
# first, with their push services' addresses and keys, and what was sent to each (docs/export.md).
NOT_MEMORY = {PushSubscription, PushDelivery}


def test_every_field_of_every_model_of_the_memory_is_exported():
    inside = {model: INSIDE[model][1] for model in INSIDE}
    exported = {kind.model: {*kind.fields, *kind.derived} for kind in KINDS}
    missing = [
        f"{model._meta.label}.{field.name}"
        for app in ("heart", "gem", "mirror", "ledger", "compass", "loom", "transfer")
        for model in apps.get_app_config(app).get_models()
        for field in model._meta.concrete_fields
        if model not in inside
        and model not in NOT_MEMORY
        and field.name not in exported.get(model, ())
    ]
    assert missing == []


# Snapshots large enough that an export takes a moment to write them.
SNAPSHOTS = """
from heart.models import ContextSnapshot
ContextSnapshot.objects.bulk_create(
    [ContextSnapshot(turn=n, assembled_system='lighthouse ' * 20_000, assembled_user='hm')
     for n in range(1, 301)], batch_size=20)
"""


@pytest.mark.django_db(databases="__all__")
def test_an_export_killed_part_way_is_named_refused_and_cleaned_by_the_next(installation, tmp_path):
    source = installation("source")
    source.shell(FILL + SNAPSHOTS)
    folder = tmp_path / "export"
    export = subprocess.Popen(
        [sys.executable, "manage.py", "export", str(folder)],
        cwd=REPO,
        env=source.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while not (folder / "snapshots.jsonl").is_file() and time.monotonic() < deadline:
        time.sleep(0.005)
    export.send_signal(signal.SIGKILL)
    export.wait()
    assert (folder / "events.jsonl").is_file() and not (folder / MANIFEST).exists()

    with pytest.raises(PortableError) as refused:
        portable_import(folder=folder)
    assert str(refused.value).startswith(f"{folder} holds an export that did not finish (begun ")
    assert installation_rows() == dict.fromkeys(installation_rows(), 0)

    again = source.manage("export", str(folder))
    assert again.returncode == 0, again.stderr
    assert f"{folder} held an export that did not finish (begun " in again.stdout
    assert source.manage("export", str(tmp_path / "whole")).returncode == 0
    assert files_of(folder) == files_of(tmp_path / "whole")


@pytest.mark.django_db(databases="__all__")
def test_it_imports_turns_not_yet_answered(exported, tmp_path):
    """Turns still queued have no reply event: several of them share none, which no unique rule
    forbids (a unique column holds any number of NULLs, on SQLite and PostgreSQL alike)."""
    _, folder = exported
    copy = shutil.copytree(folder, tmp_path / "queued")
    turns = [json.loads(line) for line in (copy / "turns.jsonl").read_text().splitlines()]
    assert len(turns) >= 2
    queued = [{**turn, "reply_event": None, "status": "queued"} for turn in turns]
    (copy / "turns.jsonl").write_text("".join(json.dumps(turn) + "\n" for turn in queued))
    manifest = json.loads((copy / MANIFEST).read_text())
    for entry in manifest["files"]:
        if entry["name"] == "turns.jsonl":
            entry["sha256"] = hashlib.sha256((copy / "turns.jsonl").read_bytes()).hexdigest()
    (copy / MANIFEST).write_text(json.dumps(manifest))

    portable_import(folder=copy, unknown_authors_blank=True, progress=lambda line: None)

    assert Turn.objects.filter(reply_event=None, status="queued").count() == len(turns)


@pytest.mark.django_db(databases="__all__")
def test_it_imports_an_export_older_than_the_ledger(exported, tmp_path):
    """An export written before the ledger existed has no model_calls.jsonl: it imports, with
    the ledger empty; any other file missing is still refused."""
    _, folder = exported
    copy = shutil.copytree(folder, tmp_path / "older")
    (copy / "model_calls.jsonl").unlink()
    manifest = json.loads((copy / MANIFEST).read_text())
    manifest["files"] = [e for e in manifest["files"] if e["name"] != "model_calls.jsonl"]
    (copy / MANIFEST).write_text(json.dumps(manifest))
    without_turns = shutil.copytree(copy, tmp_path / "no-turns")
    manifest["files"] = [e for e in manifest["files"] if e["name"] != "turns.jsonl"]
    (without_turns / MANIFEST).write_text(json.dumps(manifest))

    with pytest.raises(
        PortableError, match=r"lists no turns\.jsonl: every kind must have its file"
    ):
        portable_import(folder=without_turns, unknown_authors_blank=True, progress=print)
    imported = portable_import(folder=copy, unknown_authors_blank=True, progress=lambda _: None)

    assert imported.rows["model_calls.jsonl"] == 0
    assert Turn.objects.exists() and not ModelCall.objects.exists()


@pytest.mark.django_db(databases="__all__")
def test_fragments_exported_before_they_had_triggers_import_with_none(exported, tmp_path):
    _, folder = exported
    copy = shutil.copytree(folder, tmp_path / "older")
    rows = [json.loads(line) for line in (copy / "fragments.jsonl").read_text().splitlines()]
    (copy / "fragments.jsonl").write_text(
        "".join(
            json.dumps({k: v for k, v in row.items() if k != "triggers"}, ensure_ascii=False) + "\n"
            for row in rows
        ),
        encoding="utf-8",
    )
    manifest = json.loads((copy / MANIFEST).read_text())
    for entry in manifest["files"]:
        if entry["name"] == "fragments.jsonl":
            entry["sha256"] = hashlib.sha256((copy / "fragments.jsonl").read_bytes()).hexdigest()
    (copy / MANIFEST).write_text(json.dumps(manifest))

    portable_import(folder=copy, unknown_authors_blank=True, progress=lambda _: None)

    assert dict(Fragment.objects.values_list("key", "triggers")) == {
        "keeper": [],
        "lighthouse": [],
    }


def test_a_snapshot_exported_before_its_inputs_were_kept_still_imports():
    from transfer.portable import KINDS, _row_problems

    snapshots = next(kind for kind in KINDS if kind.model.__name__ == "ContextSnapshot")
    row = {
        "id": 1,
        "turn": 1,
        "ts": "2026-03-02T09:00:00+00:00",
        "assembled_system": "s",
        "assembled_user": "u",
        "token_counts": {},
        "items_included": {},
    }
    assert list(_row_problems(snapshots, row)) == []
    assert list(_row_problems(snapshots, {k: v for k, v in row.items() if k != "turn"})) == [
        ("turn", "is missing")
    ]


GEM_TABLE_WRITE = re.compile(
    r'\s*(?:INSERT INTO|UPDATE) "(gem_(?:fragment|fragmentedge|fragmentsource|ambientprose))"'
)


@pytest.mark.django_db(databases="__all__")
def test_it_writes_fragments_edges_sources_and_ambient_prose_through_the_gem(exported):
    """Every statement that writes one of them comes from the Gem's services."""
    _, folder = exported
    writes = []

    def seen(execute, sql, params, many, context):
        if match := GEM_TABLE_WRITE.match(sql):
            files = {Path(frame.filename) for frame in traceback.extract_stack()}
            writes.append((match.group(1), REPO / "gem" / "services.py" in files))
        return execute(sql, params, many, context)

    with connections[router.db_for_write(Fragment)].execute_wrapper(seen):
        portable_import(folder=folder, unknown_authors_blank=True, progress=lambda _: None)

    assert {table for table, _ in writes} == {
        "gem_fragment",
        "gem_fragmentedge",
        "gem_fragmentsource",
        "gem_ambientprose",
    }
    assert [table for table, by_the_gem in writes if not by_the_gem] == []
    assert Fragment.objects.count() == 2
