"""``python -m bench faults``: faults injected into turns answered by a real worker, and what
was left of each message afterwards.

``faults_run`` runs in migrated throwaway stores (the command sets them up: SQLite files, or a
PostgreSQL database of its own), with the broker and workers the command chose. It starts
the fake Messages API (``bench/fakeapi.py``) in this process and a real ``manage.py qcluster``
pointed at it, signs in with Django's test client and sends messages through the chat page's
own endpoint (``/messages/``), one at a time. Each message meets one fault:

- the API answers 429, 500 or 529, with or without ``retry-after``, then the reply;
- the stream is cut mid-way (the connection closes), or an ``error`` event arrives mid-stream;
- the API says nothing for longer than the client's timeout;
- the API fails on every attempt: the turn ends in error, with its retry offered, and the
  benchmark presses retry as the page does (``/turns/N/retry/``);
- the worker streaming the reply (the process holding the connection to the fake API) is sent
  SIGKILL, or SIGTERM;
- another connection holds the event log's write lock for longer than the worker's busy
  timeout while the reply streams and is recorded: ``BEGIN IMMEDIATE`` on SQLite's events file;
  on PostgreSQL ``LOCK TABLE`` on the log's table, which the reply's insert waits on (the
  advisory lock of ``heart.services`` is taken by a person's message only);
- the disk fills while the message's image is written;
- ``manage.py restore`` of a backup of the installation as it stands, or ``manage.py import``
  of its export, into a new empty installation of the same backend, is sent SIGKILL at a
  random moment; then the command runs again;
- the worker's cluster is sent SIGKILL (its whole process group) while it imports a generated
  SillyTavern chat of ``IMPORT_MESSAGES`` messages queued as the Anvil's Import button queues
  one, once its first batch is written; a new cluster starts, the recovery marks the run
  stopped part-way, and a second import of the same file, queued the same way, finishes it.

**The full disk** is a real refusal by the kernel, not a storage that pretends: for the one
request, the process's ``RLIMIT_FSIZE`` is lowered below the image's size (and ``SIGXFSZ``
ignored), so the unmodified ``FileSystemStorage`` gets ``EFBIG`` part-way through the image,
as it gets ``ENOSPC`` on a full disk. An unprivileged process cannot fill a real file system
without filling the machine's. The person then sends again, and that message is answered.

**The killed restore and import** each go into an installation of their own: a copy of one
migrated with its owner account, made once (its data folder copied; on PostgreSQL a database
made from it as a ``TEMPLATE``). The moment is drawn between the command's start and its last
line, as long as that took in a whole run measured at the kind's first fault; the kill comes at
the last line at the latest, so it always lands before the command ends. The installation must
then be untouched (no events), complete (the source's events), or half-filled and refused by
``manage.py check`` (``transfer.E001``); the command run again must succeed, unless the first
had finished, and leave exactly the source's events.

**The killed import** is caught when its run shows its first batch written (its counts are
saved with each beat); the recovery check (``recover_imports_task``, every minute in
production after a silence of ``SILENTSTAR_IMPORT_STALE_SECONDS``) runs here every
``RECOVERY_EVERY`` seconds with the silence ``STALE_SECONDS``. Its figures: the messages written
when it was killed, the seconds from the kill to the run marked stopped, the messages after the
second import, and those there twice (goal 0); its time to recover runs from the kill to the
second import done.

**Recovery by itself.** The worker's cluster retries API failures (``silentstar.claude``),
rides out the lock (``heart.services``) and puts a SIGTERMed turn back in the queue. A killed
worker's turn waits for the check that runs every minute in production (``recover_turns_task``)
and a silence of ``SILENTSTAR_TURN_STALE_SECONDS``; here the check runs every
``RECOVERY_EVERY`` seconds and the silence is ``STALE_SECONDS``, so the recovery of a killed
worker takes seconds instead of a minute or two.

After all the faults it counts, for every message the page accepted: its event in the log
exactly once, its turn done with exactly one reply event and one context snapshot, the plan it
carried and the thought its reply carried in working memory exactly once. ``events lost``
counts what is missing (a restored or imported copy's missing events too), ``duplicated`` what
is there twice, ``turns stuck`` the turns not done within ``TURN_PATIENCE`` seconds of their
fault (or not done at the end) and the restores and imports whose second run failed,
``messages refused`` the messages the page did not accept (any answer but 201); the time to
recover runs from the fault (the message sent, the signal, the lock taken, the refused image,
the kill) to the turn done (or the second run done).
"""

import errno
import io
import json
import logging
import os
import random
import re
import resource
import select
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager, suppress
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg

from bench.fakeapi import FakeError, FakeMessagesAPI, FakeReply
from transfer.lock import LOCK_FILE
from transfer.stopped import RUN_FILE, UNDO_DIR

# What a killed restore or import may leave: nothing changed, everything done, or a half-filled
# installation that the system checks keep the app off until the next command puts it back.
SAFELY_LEFT = ("untouched", "complete", "refused by check")
# The command that copies the installation out into DIR, and the one killed while it puts DIR
# into another installation.
TRANSFERS = {
    "restore SIGKILL": ("backup DIR --here", "restore"),
    "import SIGKILL": ("export DIR", "import"),
}
IMPORT_KILL = "import-worker kill"
IMPORT_MESSAGES = 20_000  # messages of the chat the killed worker imports: ten batches
WITHOUT_MESSAGE = (*TRANSFERS, IMPORT_KILL)  # the faults that send no message to the chat
KINDS = (
    "429",
    "429 retry-after",
    "500",
    "529",
    "529 retry-after",
    "stream cut",
    "error mid-stream",
    "timeout",
    "failing throughout",
    "SIGKILL",
    "SIGTERM",
    "database locked",
    "disk full",
    "restore SIGKILL",
    "import SIGKILL",
    IMPORT_KILL,
)
# SILENTSTAR_TURN_STALE_SECONDS (and SILENTSTAR_IMPORT_STALE_SECONDS) for the run: longer than
# a new worker takes from its claim to its first request (it imports the SDK), or an import from
# one batch to the next, on a busy small machine.
STALE_SECONDS = 10
RECOVERY_EVERY = 1.0  # seconds between runs of the recovery check (a minute in production)
CLAUDE_TIMEOUT = 1.0  # SILENTSTAR_CLAUDE_TIMEOUT for the run
CLAUDE_MAX_RETRIES = 2
BUSY_TIMEOUT_MS = 200  # the worker's SQLite busy timeout; the lock is held far longer
LOCK_HELD = 1.5  # seconds the event log's write lock is held (with a writer waiting for it)
DISK_LEFT = 4096  # bytes a file may grow to while the disk is "full"; the image is bigger
TURN_PATIENCE = 60.0  # seconds after its fault a turn may take before it counts as stuck
COMMAND_PATIENCE = 120  # seconds a manage.py command of the restore and import faults may take
WATCH_EVERY = 0.002  # seconds between looks for a restore's or import's lock file
POLL = 0.05
MARKER_RE = re.compile(r"msg(\d{4})")
REPO = Path(__file__).resolve().parent.parent
# Attempts a turn takes when recovery does only what its fault needs: SIGKILL and SIGTERM end
# the first attempt, and the retry pressed after "failing throughout" is a second one.
EXPECTED_ATTEMPTS = {"SIGKILL": 2, "SIGTERM": 2, "failing throughout": 2}


class MessageRefused(Exception):
    """The chat page did not accept a message (any answer but 201)."""


class CommandFailed(Exception):
    """A restore or import that was not killed failed."""


@dataclass
class Fault:
    kind: str
    number: int
    injected: bool = False  # evidence that the fault really happened
    recovery_s: float | None = None  # None: the turn was not done within TURN_PATIENCE
    attempts: int = 0  # the turn's attempts at the end
    refused: bool = False  # the page did not accept the message
    left: str = ""  # what a killed restore or import left: untouched, complete, refused, …
    detect_s: float | None = None  # a killed import's worker: from the kill to the run stopped
    written_before: int = 0  # a killed import's messages written when its worker was killed
    written_after: int = 0  # and after the second import
    lost: int = 0  # a restored or imported copy's events missing, and those there twice
    duplicated: int = 0
    note: str = ""


class ClusterStopped(RuntimeError):
    """The worker's cluster ended during the run, which no fault does."""


def start_cluster(env: dict[str, str], *, log: Path | None = None) -> subprocess.Popen:
    """``manage.py qcluster`` in a process group of its own, as scripts/run starts it; what it
    says goes to ``log`` (appended), or nowhere."""
    with open(log or os.devnull, "a") as said:
        return subprocess.Popen(
            [sys.executable, "manage.py", "qcluster"],
            cwd=REPO,
            env=env,
            stdout=said,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def group_kill(cluster: subprocess.Popen) -> None:
    """Whatever is left of a cluster's processes."""
    with suppress(ProcessLookupError):
        os.killpg(cluster.pid, signal.SIGKILL)
    cluster.wait(timeout=20)


def kinds_in_order(*, faults: int, seed: int) -> list[str]:
    """``faults`` kinds: every kind once per round, each round in its own shuffled order."""
    chosen = random.Random(seed)
    order: list[str] = []
    while len(order) < faults:
        round_ = list(KINDS)
        chosen.shuffle(round_)
        order += round_
    return order[:faults]


def reply_text(number: int, *, words: int = 6) -> str:
    said = " ".join(f"word{n}" for n in range(words))
    return f"<say>ans{number:04} {said}</say><thought>ans{number:04} stays on my mind</thought>"


def message_number(body: dict) -> int | None:
    """The number of the message a request answers: the last marker of its last user text (the
    ``## Message`` section comes last; earlier ones are in ``## Recent``)."""
    content = body.get("messages", [{}])[-1].get("content", "")
    text = content if isinstance(content, str) else "".join(b.get("text", "") for b in content)
    found = MARKER_RE.findall(text)
    return int(found[-1]) if found else None


def faults_run(*, faults: int, seed: int, progress: Callable[[str], None]) -> dict:
    """Send ``faults`` messages through a real worker, one fault each; count what is left.
    Django set up on migrated throwaway stores, offline (the worker is not)."""
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connections
    from django.test import Client

    # The recovery check runs in this process: it reads the same silence as the worker.
    settings.TURN_STALE_SECONDS = settings.IMPORT_STALE_SECONDS = STALE_SECONDS
    load_before = os.getloadavg()
    began = time.monotonic()
    # The transfers enter first: they keep a copy of the stores before anything is written.
    with _Transfers(moments=random.Random(seed)) as transfers, FakeMessagesAPI() as api:
        owner = get_user_model().objects.create_superuser(username="faults", password=None)
        client = Client(SERVER_NAME="localhost")
        client.force_login(owner)
        env = {
            **os.environ,
            "ANTHROPIC_API_KEY": "bench",
            "ANTHROPIC_BASE_URL": api.url,
            "NO_PROXY": ",".join(filter(None, [os.environ.get("NO_PROXY"), "127.0.0.1"])),
            "SILENTSTAR_CLAUDE_TIMEOUT": str(CLAUDE_TIMEOUT),
            "SILENTSTAR_CLAUDE_MAX_RETRIES": str(CLAUDE_MAX_RETRIES),
            "SILENTSTAR_TURN_STALE_SECONDS": str(STALE_SECONDS),
            "SILENTSTAR_SQLITE_BUSY_TIMEOUT_MS": str(BUSY_TIMEOUT_MS),
            # Its "running." line, written as it comes, says it has started.
            "SILENTSTAR_LOG_LEVEL": "INFO",
            "PYTHONUNBUFFERED": "1",
        }
        cluster_log = Path(settings.DATA_DIR) / "qcluster.log"
        cluster = start_cluster(env, log=cluster_log)
        runner = _Runner(
            api=api,
            client=client,
            cluster=cluster,
            cluster_log=cluster_log,
            cluster_env=env,
            transfers=transfers,
            progress=progress,
        )
        api.responder = runner.answer
        try:
            runner.cluster_ready()
            runner.recovery_start()
            warm_up = runner.send(0)
            runner.turn_done(warm_up, since=time.monotonic())
            done: list[Fault] = []
            for number, kind in enumerate(kinds_in_order(faults=faults, seed=seed), start=1):
                fault = runner.inject(kind, number)
                done.append(fault)
                if number % 20 == 0 or number == faults:
                    progress(f"  faults {number}/{faults}")
        finally:
            runner.recovery_stop()
            runner.cluster.send_signal(signal.SIGTERM)
            with suppress(subprocess.TimeoutExpired):
                runner.cluster.wait(timeout=20)
            group_kill(runner.cluster)
    seconds = time.monotonic() - began
    counted = _invariants_count(runner.accepted, media_root=Path(settings.MEDIA_ROOT))
    kinds = {}
    for kind in KINDS:
        of_kind = [fault for fault in done if fault.kind == kind]
        times = [fault.recovery_s for fault in of_kind if fault.recovery_s is not None]
        kinds[kind] = {
            "faults": len(of_kind),
            "injected": sum(fault.injected for fault in of_kind),
            "recovered": len(times),
            "longest_s": max(times, default=0.0),
        }
        if kind in TRANSFERS:
            kinds[kind]["left"] = dict(Counter(fault.left for fault in of_kind))
            kinds[kind]["held_s"], kinds[kind]["lines"] = transfers.measured.get(kind, (0.0, 0))
        if kind == IMPORT_KILL:
            detected = [fault.detect_s for fault in of_kind if fault.detect_s is not None]
            kinds[kind] |= {
                "messages": IMPORT_MESSAGES,
                "longest_detect_s": max(detected, default=0.0),
                "written_before": [fault.written_before for fault in of_kind],
                "written_after": [fault.written_after for fault in of_kind],
                "twice": sum(fault.duplicated for fault in of_kind),
            }
    recovered = [fault for fault in done if fault.recovery_s is not None]
    longest = max(recovered, key=lambda fault: fault.recovery_s, default=None)
    return {
        "faults": len(done),
        "seed": seed,
        "seconds": seconds,
        "database": connections["events"].vendor,
        "broker": "Redis" if settings.REDIS_URL else "ORM",
        "workers": settings.Q_CLUSTER["workers"],
        "kinds": kinds,
        **counted,
        "events_lost": counted["events_lost"] + sum(f.lost for f in done),
        "duplicated": counted["duplicated"] + sum(f.duplicated for f in done),
        "turns_stuck": counted["turns_stuck"]
        + sum(f.recovery_s is None and not f.refused for f in done),
        "messages_refused": sum(f.refused for f in done),
        "transfers_left_unsafe": sum(
            f.left not in SAFELY_LEFT for f in done if f.kind in TRANSFERS
        ),
        "longest_recovery_s": longest.recovery_s if longest else 0.0,
        "longest_kind": longest.kind if longest else "",
        "turns_rerun": sum(f.attempts > EXPECTED_ATTEMPTS.get(f.kind, 1) for f in done),
        "notes": [f"{f.kind} #{f.number}: {f.note}" for f in done if f.note],
        "stale_seconds": STALE_SECONDS,
        "recovery_every_s": RECOVERY_EVERY,
        "load_before": [round(figure, 2) for figure in load_before],
        "load_after": [round(figure, 2) for figure in os.getloadavg()],
        "cpus": os.cpu_count(),
        "faults_list": [asdict(fault) for fault in done],
    }


class _Runner:
    """Sends the messages, injects the faults and waits for the turns."""

    def __init__(
        self,
        *,
        api,
        client,
        cluster: subprocess.Popen,
        cluster_log: Path,
        cluster_env: dict[str, str],
        transfers: "_Transfers",
        progress: Callable[[str], None],
    ) -> None:
        self.api = api
        self.cluster = cluster
        self.cluster_log = cluster_log
        self.cluster_env = cluster_env
        self.progress = progress
        self.client = client
        self.transfers = transfers
        self.accepted: list[int] = []  # numbers of the messages the page accepted
        # What the API answers each message's requests, in order, before the plain reply: bound
        # to the message, so a request of another turn never takes a fault meant for this one.
        self._scripts: dict[int, list] = {}
        self._scripts_lock = threading.Lock()
        self._recovery_paused = threading.Lock()
        self._recovery_stop = threading.Event()
        self._recovery: threading.Thread | None = None

    # --- the recovery check, standing in for the minutely schedule --------------------------

    def recovery_start(self) -> None:
        self._recovery = threading.Thread(target=self._recovery_loop, daemon=True)
        self._recovery.start()

    def recovery_stop(self) -> None:
        self._recovery_stop.set()
        if self._recovery is not None:
            self._recovery.join(timeout=30)

    def _recovery_loop(self) -> None:
        from django.db import OperationalError, connections

        from heart.tasks import recover_turns_task
        from transfer.tasks import recover_imports_task

        try:
            while not self._recovery_stop.wait(RECOVERY_EVERY):
                # An OperationalError: the event store locked by a fault.
                with self._recovery_paused, suppress(OperationalError):
                    recover_turns_task()
                    recover_imports_task()
        finally:
            connections.close_all()

    # --- the fake API's answers ------------------------------------------------------------

    def answer(self, body: dict):

        number = message_number(body) or 0
        with self._scripts_lock:
            script = self._scripts.get(number)
            if script:
                return script.pop(0)
        return FakeReply(reply_text(number), chunks=4)

    def script(self, number: int, *responses) -> None:
        with self._scripts_lock:
            self._scripts[number] = list(responses)

    def script_left(self, number: int) -> int:
        with self._scripts_lock:
            return len(self._scripts.get(number, []))

    # --- messages and turns ----------------------------------------------------------------

    def send(self, number: int, *, image: bytes | None = None) -> int:
        """Send message ``number`` as the chat page does; its turn's id."""
        from django.core.files.uploadedfile import SimpleUploadedFile

        data = {
            "message": f"<plan>water the ferns, msg{number:04}</plan> how was it, msg{number:04}?",
            "identity": "",
        }
        if image is not None:
            data["image"] = SimpleUploadedFile(f"msg{number:04}.png", image, "image/png")
        response = self.client.post("/messages/", data, headers={"HX-Request": "true"})
        if response.status_code != 201:
            raise MessageRefused(f"the page answered message {number} {response.status_code}")
        self.accepted.append(number)
        return self.turn_of(number)

    def turn_of(self, number: int) -> int:
        from events.models import Turn

        return Turn.objects.get(event__content__contains=f"msg{number:04}").pk

    def turn_status(self, turn_id: int) -> tuple[str, int, object]:
        from events.models import Turn

        return Turn.objects.values_list("status", "attempts", "finished_at").get(pk=turn_id)

    def cluster_running(self) -> None:
        """Refuse to go on without the worker: a cluster that stopped would leave every turn
        after it waiting out its patience, and the run's figures would be of no worker at all."""
        if (status := self.cluster.poll()) is not None:
            last = self.cluster_log.read_text(errors="replace").splitlines()[-20:]
            raise ClusterStopped(
                f"the worker's cluster stopped (exit status {status}); the last it said:\n"
                + "\n".join(last)
            )

    def cluster_ready(self, *, after: int = 0) -> None:
        """Until the cluster says it is running (in its log past the ``after``-th character),
        with nothing else writing meanwhile: its start-up checks ask SQLite for JSON, and a
        lock held past the worker's short busy timeout makes Django take SQLite for one without
        it, and the cluster refuse to start."""
        deadline = time.monotonic() + TURN_PATIENCE
        while " running." not in self.cluster_log.read_text(errors="replace")[after:]:
            self.cluster_running()
            if time.monotonic() > deadline:
                said = self.cluster_log.read_text(errors="replace").splitlines()[-20:]
                raise ClusterStopped(
                    f"the worker's cluster did not start in {TURN_PATIENCE} s; the last it "
                    "said:\n" + "\n".join(said)
                )
            time.sleep(POLL)

    def turn_done(self, turn_id: int, *, since: float) -> float | None:
        """Seconds from ``since`` to the turn done; None if it is not within ``TURN_PATIENCE``
        (or it ended in error: this benchmark's every reply comes in the end)."""
        while time.monotonic() - since < TURN_PATIENCE:
            self.cluster_running()
            status, _, _ = self.turn_status(turn_id)
            if status == "done":
                return time.monotonic() - since
            if status == "error":
                return None
            time.sleep(POLL)
        return None

    def turn_streaming(self, turn_id: int) -> bool:
        """Until the turn shows part of its reply; whether it did within ``TURN_PATIENCE``."""
        from events.models import Turn

        deadline = time.monotonic() + TURN_PATIENCE
        while time.monotonic() < deadline:
            self.cluster_running()
            if Turn.objects.filter(pk=turn_id, status="running").exclude(partial_text="").exists():
                return True
            time.sleep(POLL)
        return False

    def requests_for(self, number: int) -> int:
        return sum(message_number(body) == number for body in self.api.requests)

    # --- the faults ---------------------------------------------------------------------------

    def inject(self, kind: str, number: int) -> Fault:
        fault = Fault(kind=kind, number=number)
        if kind in TRANSFERS:
            self.transfers.killed(fault)
            return fault
        if kind == IMPORT_KILL:
            self._import_worker_killed(fault)
            return fault
        try:
            self._turn_fault(fault)
        except MessageRefused as refused:
            fault.refused = True
            fault.note = str(refused)
            return fault
        if self.script_left(number):
            fault.note = f"{self.script_left(number)} scripted responses were never asked for"
        _, fault.attempts, _ = self.turn_status(self.turn_of(number))
        return fault

    def _turn_fault(self, fault: Fault) -> None:
        kind, number = fault.kind, fault.number
        scripted = {
            "429": [FakeError(429)],
            "429 retry-after": [FakeError(429, retry_after=1)],
            "500": [FakeError(500)],
            "529": [FakeError(529)],
            "529 retry-after": [FakeError(529, retry_after=1)],
            "stream cut": [FakeReply(reply_text(number), chunks=6, fail_after=3, error_type=None)],
            "error mid-stream": [FakeReply(reply_text(number), chunks=6, fail_after=3)],
            "timeout": [FakeReply(reply_text(number), chunks=1, delay=CLAUDE_TIMEOUT + 0.5)],
        }
        if kind in scripted:
            self.script(number, *scripted[kind])
            since = time.monotonic()
            turn_id = self.send(number)
            fault.recovery_s = self.turn_done(turn_id, since=since)
            fault.injected = self.script_left(number) == 0 and self.requests_for(number) >= 2
        elif kind == "failing throughout":
            self._failing_throughout(fault)
        elif kind in ("SIGKILL", "SIGTERM"):
            self._worker_signalled(fault, signal.SIGKILL if kind == "SIGKILL" else signal.SIGTERM)
        elif kind == "database locked":
            self._database_locked(fault)
        elif kind == "disk full":
            self._disk_full(fault)
        else:
            raise ValueError(f"no fault {kind!r}")

    def _failing_throughout(self, fault: Fault) -> None:

        self.script(fault.number, *[FakeError(529)] * (CLAUDE_MAX_RETRIES + 1))
        since = time.monotonic()
        turn_id = self.send(fault.number)
        while time.monotonic() - since < TURN_PATIENCE:
            status, _, _ = self.turn_status(turn_id)
            if status != "queued" and status != "running":
                break
            time.sleep(POLL)
        if status != "error":
            fault.note = f"the turn ended {status}, not in error"
            fault.recovery_s = self.turn_done(turn_id, since=since)
            return
        retried = self.client.post(f"/turns/{turn_id}/retry/", headers={"HX-Request": "true"})
        if retried.status_code != 200:
            fault.note = f"retry answered {retried.status_code}"
            return
        fault.recovery_s = self.turn_done(turn_id, since=since)
        fault.injected = self.requests_for(fault.number) >= CLAUDE_MAX_RETRIES + 2

    def _worker_signalled(self, fault: Fault, signum: int) -> None:

        self.script(
            fault.number, FakeReply(reply_text(fault.number, words=40), chunks=40, delay=0.1)
        )
        turn_id = self.send(fault.number)
        if not self.turn_streaming(turn_id):
            fault.note = "the reply never streamed"
            return
        worker = _process_connected_to(port=int(self.api.url.rsplit(":", 1)[1]))
        if worker is None:
            fault.note = "no process held a connection to the API"
            since = time.monotonic()
        else:
            os.kill(worker, signum)
            since = time.monotonic()
        fault.recovery_s = self.turn_done(turn_id, since=since)
        _, attempts, _ = self.turn_status(turn_id)
        fault.injected = worker is not None and not _alive(worker) and attempts >= 2

    def _import_worker_killed(self, fault: Fault) -> None:
        """A generated chat queued for import; the cluster killed once its first batch is
        written; the run marked stopped by the recovery; the same file queued again."""
        from events.models import Event
        from transfer.bridges import BATCH
        from transfer.models import ImportRun

        chat = _ChatImport(name=f"faults{fault.number:04}")
        run = chat.enqueue()
        while time.monotonic() - chat.since < TURN_PATIENCE:
            self.cluster_running()
            run.refresh_from_db()
            if run.status not in ("queued", "running") or run.counts.get("events", 0) >= BATCH:
                break
            time.sleep(POLL / 5)
        if run.status != "running" or run.counts.get("events", 0) < BATCH:
            fault.note = f"the import was {run.status} with {run.counts} when the kill was due"
            return
        group_kill(self.cluster)
        since = time.monotonic()
        fault.written_before = chat.written()
        after = len(self.cluster_log.read_text(errors="replace"))
        self.cluster = start_cluster(self.cluster_env, log=self.cluster_log)
        while time.monotonic() - since < TURN_PATIENCE:
            if ImportRun.objects.filter(pk=run.pk, status="stopped").exists():
                fault.detect_s = time.monotonic() - since
                break
            time.sleep(POLL)
        self.cluster_ready(after=after)
        if fault.detect_s is None:
            fault.note = "the killed import's run was not marked stopped"
            return
        second = chat.enqueue()
        while time.monotonic() - since < 2 * TURN_PATIENCE:
            self.cluster_running()
            second.refresh_from_db()
            if second.status not in ("queued", "waiting", "running"):
                break
            time.sleep(POLL)
        if second.status != "done":
            fault.note = f"the second import was {second.status}: {second.error}"
            return
        fault.recovery_s = time.monotonic() - since
        texts = Counter(Event.objects.filter(content__contains=chat.mark).values_list("content"))
        fault.written_after = len(texts)
        fault.lost = IMPORT_MESSAGES - len(texts)
        fault.duplicated = texts.total() - len(texts)
        fault.injected = 0 < fault.written_before < IMPORT_MESSAGES
        self.progress(
            f"  {IMPORT_KILL} #{fault.number}: {fault.written_before:,} of {IMPORT_MESSAGES:,} "
            f"messages written when the worker was killed; its run marked stopped "
            f"{fault.detect_s:.1f} s after the kill (silence {STALE_SECONDS} s, the check every "
            f"{RECOVERY_EVERY:g} s); the next import done {fault.recovery_s:.1f} s after it, "
            f"{fault.written_after:,} messages, {fault.duplicated} twice"
        )

    def _database_locked(self, fault: Fault) -> None:

        self.script(
            fault.number, FakeReply(reply_text(fault.number, words=16), chunks=8, delay=0.1)
        )
        turn_id = self.send(fault.number)
        if not self.turn_streaming(turn_id):
            fault.note = "the reply never streamed"
            return
        with self._recovery_paused, _event_log_locked() as writer_waiting:
            since = time.monotonic()
            status, _, _ = self.turn_status(turn_id)
            while not (waited := writer_waiting()) and time.monotonic() - since < TURN_PATIENCE:
                time.sleep(POLL)
            time.sleep(LOCK_HELD)
        released = time.time()
        fault.recovery_s = self.turn_done(turn_id, since=since)
        _, _, finished_at = self.turn_status(turn_id)
        fault.injected = (
            status == "running"
            and waited
            and finished_at is not None
            and finished_at.timestamp() > released
        )

    def _disk_full(self, fault: Fault) -> None:
        from events.models import Event

        image = _noise_png()
        request_log = logging.getLogger("django.request")
        soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        refused = None
        with self._recovery_paused:  # nothing else of this process writes meanwhile
            resource.setrlimit(resource.RLIMIT_FSIZE, (DISK_LEFT, hard))
            request_log.disabled = True  # the refused write's traceback is expected
            try:
                self.send(fault.number, image=image)
            except OSError as error:
                refused = error.errno
            finally:
                resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
                signal.signal(signal.SIGXFSZ, previous)
                request_log.disabled = False
        since = time.monotonic()
        if refused is None:
            fault.note = "the image was stored: the disk was not full"
            self.accepted.pop()
        logged = Event.objects.filter(content__contains=f"msg{fault.number:04}").exists()
        fault.injected = refused == errno.EFBIG and not logged
        turn_id = self.send(fault.number, image=image)  # the person sends it again
        fault.recovery_s = self.turn_done(turn_id, since=since)


class _ChatImport:
    """A SillyTavern chat of ``IMPORT_MESSAGES`` messages between the installation's first
    person and its companion (named as its identities, so no speaker is asked for), kept as the
    upload page keeps it, and queued for import as the Import button queues it."""

    def __init__(self, *, name: str) -> None:
        from gem.selectors import identities_current
        from transfer.bridges import file_keep

        who = identities_current()
        self.name = name
        self.mark = f" of {name}."  # in every message's text, and in no other event's
        lines = [{"user_name": who.users[0], "character_name": who.default_companion}]
        lines += [
            {
                "name": who.users[0] if n % 2 == 0 else who.default_companion,
                "is_user": n % 2 == 0,
                "send_date": 1_715_867_107_000 + n * 1000,
                "mes": f"line {n}{self.mark}",
            }
            for n in range(IMPORT_MESSAGES)
        ]
        lines[0]["create_date"] = name
        self.sha256 = file_keep("\n".join(json.dumps(line) for line in lines).encode())
        self.since = time.monotonic()

    def enqueue(self):
        from transfer.bridges import import_enqueue, kept_plan

        plan = kept_plan(sha256=self.sha256, format="sillytavern", file_name=f"{self.name}.jsonl")
        self.since = time.monotonic()
        return import_enqueue(plan=plan, file_sha256=self.sha256, user=None)

    def written(self) -> int:
        from events.models import Event

        return Event.objects.filter(content__contains=self.mark).count()


@contextmanager
def _event_log_locked() -> Iterator[Callable[[], bool]]:
    """Hold the event log's write lock for the block, as a long write of another process would,
    reads going on; yields whether a writer is waiting for it now. On SQLite ``BEGIN
    IMMEDIATE`` on the events file, whose waiters cannot be seen (always True: the turn's last
    write after the release is the evidence). On PostgreSQL ``LOCK TABLE … IN EXCLUSIVE MODE``
    on the log's table, which the reply's insert waits on, its waiters read from ``pg_locks``."""
    from django.conf import settings
    from django.db import connections

    from events.models import Event
    from transfer.backup import pg_connect

    if connections["events"].vendor != "postgresql":
        holder = sqlite3.connect(
            settings.DATABASES["events"]["NAME"], isolation_level=None, timeout=10
        )
        try:
            holder.execute("BEGIN IMMEDIATE")
            yield lambda: True
            holder.execute("COMMIT")
        finally:
            holder.close()
        return
    table = Event._meta.db_table
    with pg_connect("events") as holder, holder.transaction():
        holder.execute(f"LOCK TABLE {table} IN EXCLUSIVE MODE")
        waiting = (
            "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE relation = %s::regclass AND NOT granted)"
        )
        yield lambda: holder.execute(waiting, [table]).fetchone()[0]


@dataclass
class _Installation:
    """A throwaway installation of the bench's backend: its data folder and, on PostgreSQL, its
    database's name."""

    data: Path
    database: str = ""


class _Transfers:
    """The restore and import faults: new empty installations of the bench's own backend, a
    backup or export of the bench's installation put into each by a command killed part-way."""

    def __init__(self, *, moments: random.Random) -> None:
        self.moments = moments
        self.made = 0
        self._folder: tempfile.TemporaryDirectory | None = None
        self._template: _Installation | None = None
        # Per kind, a whole run's seconds to its last line, and its lines.
        self.measured: dict[str, tuple[float, int]] = {}

    def __enter__(self) -> "_Transfers":
        from django.conf import settings

        self._folder = tempfile.TemporaryDirectory(prefix="silentstar-bench-faults-")
        if not settings.DATABASE_URL:
            self._stores_keep()
        return self

    def _stores_keep(self) -> None:
        """The bench's SQLite stores as the command migrated them, nothing written yet, copied
        into the template installation's folder: the same stores a migration of its own would
        make, without the seconds four migrations take."""
        from django.conf import settings

        kept = self.folder / "template"
        kept.mkdir()
        for alias, name in settings.SQLITE_FILES.items():
            with (
                closing(sqlite3.connect(settings.DATABASES[alias]["NAME"])) as store,
                closing(sqlite3.connect(kept / name)) as copy,
            ):
                store.backup(copy)

    def __exit__(self, *exc_info) -> None:
        if self._template is not None:
            self._installation_drop(self._template)
        self._folder.cleanup()

    @property
    def folder(self) -> Path:
        return Path(self._folder.name)

    def killed(self, fault: Fault) -> None:
        """Copy the bench's installation out, put the copy into a new installation with the
        command killed at a random moment, check what it left, and run the command again."""
        from events.models import Event

        copy_out, command = TRANSFERS[fault.kind]
        copy = self.folder / f"copy{fault.number:04}"
        source = Counter(Event.objects.values_list("id", "actor", "content"))
        copied = _manage(
            [str(copy) if word == "DIR" else word for word in copy_out.split()], env=os.environ
        )
        if copied.returncode != 0:
            fault.note = f"{copy_out} failed: {copied.stderr.strip()[-300:]}"
            return
        target = None
        try:
            if fault.kind not in self.measured:
                try:
                    self.measured[fault.kind] = self._whole_run_measure([command, str(copy)])
                except CommandFailed as failed:
                    fault.note = str(failed)
                    return
            held_s, lines = self.measured[fault.kind]
            target = self._installation_new()
            killed = _killed_while_held(
                [command, str(copy)],
                env=self._env(target),
                lock=target.data / LOCK_FILE,
                after=self.moments.uniform(0, held_s),
                lines=lines,
            )
            since = time.monotonic()
            fault.injected = killed.returncode == -signal.SIGKILL
            fault.left = self._left(target, source=source)
            if fault.left != "complete":
                again = _manage([command, str(copy)], env=self._env(target))
                if again.returncode != 0:
                    fault.note = f"{command} again failed: {again.stderr.strip()[-300:]}"
                    return
            fault.recovery_s = time.monotonic() - since
            copied_events = self._events(target)
            fault.lost = (source - copied_events).total()
            fault.duplicated = (copied_events - source).total()
        finally:
            if target is not None:
                self._installation_drop(target)
            shutil.rmtree(copy, ignore_errors=True)

    def _left(self, target: _Installation, *, source: Counter) -> str:
        """What the killed command left in ``target``."""
        if (target.data / UNDO_DIR / RUN_FILE).exists():
            checked = _manage(["check"], env=self._env(target))
            if checked.returncode != 0 and "transfer.E001" in checked.stderr:
                return "refused by check"
            return "half-filled, not refused by check"
        try:
            events = self._events(target)
        except (sqlite3.Error, psycopg.Error) as error:
            return f"unreadable ({error})"
        if not events:
            return "untouched"
        return "complete" if events == source else "neither untouched nor complete"

    def _whole_run_measure(self, args: list[str]) -> tuple[float, int]:
        """A whole run of the command in a new installation: the seconds from the moment it
        holds the installation (its lock file appears) to its last line, and its lines."""
        target = self._installation_new()
        lock = target.data / LOCK_FILE
        try:
            watched = _Watched(args, env=self._env(target))
            held_at = None
            while not watched.ended:
                watched.read(WATCH_EVERY)
                if held_at is None and lock.exists():
                    held_at = time.monotonic()
            done = watched.finish(kill=False)
        finally:
            self._installation_drop(target)
        if done.returncode != 0 or held_at is None:
            raise CommandFailed(f"a whole run of {args[0]} failed: {done.stderr.strip()[-300:]}")
        return watched.last_line_at - held_at, watched.lines()

    # --- the installations ------------------------------------------------------------------

    def _installation_new(self) -> _Installation:
        """An empty installation, migrated, with its owner account: a copy of the template."""
        if self._template is None:
            self._template = self._template_make()
        self.made += 1
        target = _Installation(data=self.folder / f"installation{self.made:04}")
        shutil.copytree(self._template.data, target.data)
        if self._template.database:
            target.database = f"{_own_database()}_{self.made:04}"
            _postgres(f'CREATE DATABASE "{target.database}" TEMPLATE "{self._template.database}"')
        return target

    def _template_make(self) -> _Installation:
        from django.conf import settings

        template = _Installation(data=self.folder / "template")
        migrations = []  # on SQLite its stores are the bench's, kept migrated (_stores_keep)
        if settings.DATABASE_URL:
            template.data.mkdir()  # the settings make none on PostgreSQL: only media go there
            template.database = f"{_own_database()}_template"
            _postgres(f'CREATE DATABASE "{template.database}"')
            migrations = [
                f"call_command('migrate', database={alias!r}, verbosity=0)"
                for alias in settings.STORE_ALIASES
            ]
        set_up = "\n".join(
            [
                "from django.core.management import call_command",
                *migrations,
                "call_command('ensure_owner')",
                "call_command('source_identities')",
            ]
        )
        done = _manage(["shell", "--no-imports", "-c", set_up], env=self._env(template))
        if done.returncode != 0:
            raise RuntimeError(f"the template installation failed: {done.stderr[-500:]}")
        return template

    def _installation_drop(self, target: _Installation) -> None:
        if target.database:
            _postgres(f'DROP DATABASE IF EXISTS "{target.database}" WITH (FORCE)')
        shutil.rmtree(target.data, ignore_errors=True)

    def _env(self, target: _Installation) -> dict[str, str]:
        """The installation's environment: the bench's (offline, its other stores' URLs
        blank), its own data folder and database, no broker (no worker runs there)."""
        from django.conf import settings

        url = ""
        if target.database:
            url = urlunsplit(urlsplit(settings.DATABASE_URL)._replace(path=f"/{target.database}"))
        return {
            **os.environ,
            "SILENTSTAR_DATA_DIR": str(target.data),
            "DATABASE_URL": url,
            "REDIS_URL": "",
            "PYTHONUNBUFFERED": "1",
        }

    def _events(self, target: _Installation) -> Counter:
        """The installation's events, read from its store directly."""
        from django.conf import settings

        from events.models import Event

        query = f"SELECT id, actor, content FROM {Event._meta.db_table}"
        if target.database:
            with psycopg.connect(self._env(target)["DATABASE_URL"]) as connection:
                return Counter(connection.execute(query).fetchall())
        path = target.data / settings.SQLITE_FILES["events"]
        if not path.is_file():  # connecting would make it
            raise sqlite3.OperationalError(f"{path} is missing")
        with closing(sqlite3.connect(path)) as connection:
            return Counter(connection.execute(query).fetchall())


def _own_database() -> str:
    """The name of the bench's own PostgreSQL database; its installations' are named after it
    (the command drops every database so named at the end)."""
    from django.conf import settings

    return settings.DATABASES["default"]["NAME"]


def _postgres(statement: str) -> None:
    """A statement outside any transaction (CREATE or DROP DATABASE), on the bench's server."""
    from transfer.backup import pg_connect

    with pg_connect("default") as connection:
        connection.autocommit = True
        connection.execute(statement)


def _manage(args: list[str], *, env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=COMMAND_PATIENCE,
    )


class _Watched:
    """``manage.py ARGS`` in a process group of its own, its output read as it comes."""

    def __init__(self, args: list[str], *, env) -> None:
        self.run = subprocess.Popen(
            [sys.executable, "manage.py", *args],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self.printed = b""
        self.last_line_at = time.monotonic()
        self.ended = False  # it closed its output

    def lines(self) -> int:
        return self.printed.count(b"\n")

    def read(self, timeout: float) -> None:
        """What it prints within ``timeout`` seconds."""
        ready, _, _ = select.select([self.run.stdout], [], [], max(timeout, 0.0))
        if not ready:
            return
        chunk = os.read(self.run.stdout.fileno(), 65536)
        self.ended = not chunk
        if b"\n" in chunk:
            self.last_line_at = time.monotonic()
        self.printed += chunk

    def finish(self, *, kill: bool) -> subprocess.CompletedProcess:
        """Its end, after SIGKILL to its whole group with ``kill`` (the ``pg_restore`` it runs
        too, as when the machine stops)."""
        if kill:
            with suppress(ProcessLookupError):
                os.killpg(self.run.pid, signal.SIGKILL)
        rest, errors = self.run.communicate(timeout=COMMAND_PATIENCE)
        return subprocess.CompletedProcess(
            self.run.args, self.run.returncode, (self.printed + rest).decode(), errors.decode()
        )


def _killed_while_held(
    args: list[str], *, env, lock: Path, after: float, lines: int
) -> subprocess.CompletedProcess:
    """``manage.py ARGS`` sent SIGKILL ``after`` seconds from the moment it holds the
    installation (``lock`` appears), or at its ``lines``-th line if that comes first (the last
    line of a whole run: the kill lands before the command ends)."""
    watched = _Watched(args, env=env)
    while not watched.ended and not lock.exists():
        watched.read(WATCH_EVERY)
    deadline = time.monotonic() + after
    while not watched.ended and watched.lines() < lines:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        watched.read(left)
    return watched.finish(kill=True)


def _invariants_count(accepted: list[int], *, media_root: Path) -> dict:
    """What is missing and what is there twice, for every accepted message."""
    from events.models import Event, Turn
    from gem.models import WorkingMemory
    from heart.models import ContextSnapshot

    lost = duplicated = stuck = 0
    for number in accepted:
        said, answered = f"msg{number:04}", f"ans{number:04}"
        wanted = {
            "message": Event.objects.filter(content__contains=said).count(),
            "plan": WorkingMemory.objects.filter(type="plan", content__contains=said).count(),
        }
        turn = Turn.objects.filter(event__content__contains=said).first()
        if turn is None or turn.status != "done":
            stuck += 1
        else:
            wanted |= {
                "reply": Event.objects.filter(content__contains=answered).count(),
                "thought": WorkingMemory.objects.filter(
                    type="thought", content__contains=answered
                ).count(),
                "snapshot": ContextSnapshot.objects.filter(turn=turn.pk).count(),
            }
        lost += sum(count == 0 for count in wanted.values())
        duplicated += sum(max(0, count - 1) for count in wanted.values())
    images = {path for path in (media_root / "images").rglob("*") if path.is_file()}
    kept = {
        media_root / name
        for name in Event.objects.exclude(image="").values_list("image", flat=True)
    }
    return {
        "messages": len(accepted),
        "turns": Turn.objects.count(),
        "events_lost": lost,
        "duplicated": duplicated + max(0, Turn.objects.count() - len(accepted)),
        "turns_stuck": stuck,
        "images_left_behind": len(images - kept),
    }


def _process_connected_to(*, port: int) -> int | None:
    """The process of this user with an established TCP connection to 127.0.0.1:``port``
    (the worker streaming from the fake API), read from /proc; None if there is none."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with suppress(FileNotFoundError), open(table) as rows:
            next(rows)
            for row in rows:
                fields = row.split()
                remote_port = int(fields[2].rsplit(":", 1)[1], 16)
                if remote_port == port and fields[3] == "01":  # ESTABLISHED
                    inodes.add(f"socket:[{fields[9]}]")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        with suppress(OSError):
            for descriptor in (entry / "fd").iterdir():
                with suppress(OSError):
                    if os.readlink(descriptor) in inodes:
                        return int(entry.name)
    return None


def _alive(pid: int) -> bool:
    """Whether the process runs still (a zombie waiting for its parent does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _noise_png(size: int = 64) -> bytes:
    """A PNG of random pixels: it does not compress below ``DISK_LEFT``."""
    from PIL import Image

    image = Image.frombytes("RGB", (size, size), random.Random(size).randbytes(size * size * 3))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()
