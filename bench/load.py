"""The load test: the site under gunicorn with its worker, and simulated people using the chat.

``load_measure`` runs in migrated throwaway stores (``python -m bench load`` starts it in a
process of its own): it creates the owner account, starts the worker (``manage.py qcluster``) and
gunicorn with the production settings (``deploy/gunicorn.conf.py``) on a spare port, then
runs the swarm in another process (``python -m bench.load``), where locust's gevent patches
nothing but that process. Each simulated person signs in, reads the chat page, polls the worker's
status and sends messages, polling each turn until it is answered, as the chat page does.
"""

import io
import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

SEND_WEIGHT, READ_WEIGHT, STATUS_WEIGHT = 1, 3, 3
POLL_SECONDS = 0.3  # the pending turn's hx-trigger delay on the chat page
POLL_GIVE_UP_SECONDS = 30
PENDING = 'class="message companion pending"'
WORDS = "evening river lantern quiet morning letter garden window music walk tea rain".split()


def spare_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def port_wait(port: int, *, process: subprocess.Popen, seconds: float = 30) -> None:
    """Until something answers on the port; a process that stops first is an error."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server stopped (exit status {process.returncode})")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing answered on port {port} within {seconds:.0f} s")


def load_measure(
    *, seconds: int, users: int, workers: int, base_dir: Path, progress: Callable[[str], None]
) -> dict:
    """Serve, swarm for ``seconds`` and count; Django set up on migrated throwaway stores."""
    from django.conf import settings
    from django.core.management import call_command

    from events.models import Turn, TurnStatus

    call_command("ensure_owner", verbosity=0, stdout=io.StringIO())
    port = spare_port()
    env = {**os.environ, "GUNICORN_BIND": f"127.0.0.1:{port}", "WEB_CONCURRENCY": str(workers)}
    logs = Path(settings.DATA_DIR)
    with (
        open(logs / "qcluster.log", "w") as cluster_log,
        open(logs / "gunicorn.log", "w") as server_log,
    ):
        cluster = subprocess.Popen(
            [sys.executable, "manage.py", "qcluster"],
            cwd=base_dir,
            env=env,
            stdout=cluster_log,
            stderr=subprocess.STDOUT,
        )
        server = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "--config", "deploy/gunicorn.conf.py"],
            cwd=base_dir,
            env=env,
            stdout=server_log,
            stderr=subprocess.STDOUT,
        )
        try:
            port_wait(port, process=server)
            progress(
                f"  gunicorn on port {port}, workers: {workers}; {users} users for {seconds} s"
            )
            load_before = _load_average()
            swarm_size = [str(users), str(seconds)]
            swarm = subprocess.run(
                [sys.executable, "-m", "bench.load", f"http://127.0.0.1:{port}", *swarm_size],
                cwd=base_dir,
                env=env,
                stdout=subprocess.PIPE,
                text=True,
                timeout=seconds + POLL_GIVE_UP_SECONDS + 60,
            )
            load_after = _load_average()
            if swarm.returncode != 0:
                raise RuntimeError(f"the swarm failed (exit status {swarm.returncode})")
            result = json.loads(swarm.stdout.strip().splitlines()[-1])
            in_flight = Turn.objects.filter(status__in=[TurnStatus.QUEUED, TurnStatus.RUNNING])
            turns = {
                "turns_sent": Turn.objects.count(),
                "turns_answered": Turn.objects.filter(status=TurnStatus.DONE).count(),
                "turns_failed": Turn.objects.filter(status=TurnStatus.ERROR).count(),
                "turns_unanswered": in_flight.count(),
            }
        finally:
            for process in (server, cluster):
                process.terminate()
            for process in (server, cluster):
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
    return {
        **result,
        **turns,
        "workers": workers,
        "broker": "Redis" if settings.REDIS_URL else "ORM",
        "database": settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1],
        "load_before": load_before,
        "load_after": load_after,
        "cpus": os.cpu_count(),
    }


def _load_average() -> list[float]:
    return [round(figure, 2) for figure in os.getloadavg()]


# --- the swarm, in a process of its own ---------------------------------------------------------


def swarm_run(*, host: str, users: int, seconds: int, password: str, username: str) -> dict:
    """``users`` simulated people on ``host`` for ``seconds``, with locust; its figures."""
    import random

    import gevent
    from locust import HttpUser, between, task
    from locust.env import Environment
    from locust.log import setup_logging

    setup_logging("WARNING")

    class Person(HttpUser):
        wait_time = between(0.5, 1.5)
        csrf = ""

        def on_start(self) -> None:
            page = self.client.get("/accounts/login/", name="sign-in page")
            token = _csrf_field(page.text)
            with self.client.post(
                "/accounts/login/",
                data={"username": username, "password": password, "csrfmiddlewaretoken": token},
                headers={"Referer": f"{host}/accounts/login/"},
                name="sign in",
                allow_redirects=False,
                catch_response=True,
            ) as signed:
                if signed.status_code != 302:
                    signed.failure(f"sign-in answered {signed.status_code}, not a redirect")
            self.read()
            self.send()

        @task(READ_WEIGHT)
        def read(self) -> None:
            with self.client.get("/", name="chat page", catch_response=True) as page:
                found = re.search(r'name="csrf-token" content="([^"]+)"', page.text)
                if not found:
                    page.failure("no CSRF token on the chat page (signed out?)")
                    return
                self.csrf = found.group(1)

        @task(STATUS_WEIGHT)
        def status(self) -> None:
            self.client.get("/worker/", name="worker status", headers={"HX-Request": "true"})

        @task(SEND_WEIGHT)
        def send(self) -> None:
            text = " ".join(random.choices(WORDS, k=random.randint(3, 12)))
            with self.client.post(
                "/messages/",
                data={"message": text, "identity": ""},
                headers={"X-CSRFToken": self.csrf, "HX-Request": "true"},
                name="send",
                catch_response=True,
            ) as sent:
                found = re.search(r'data-turn="(\d+)"', sent.text)
                if sent.status_code != 201 or not found:
                    sent.failure(f"send answered {sent.status_code}")
                    return
            turn = found.group(1)
            deadline = time.monotonic() + POLL_GIVE_UP_SECONDS
            while time.monotonic() < deadline:
                gevent.sleep(POLL_SECONDS)
                polled = self.client.get(
                    f"/turns/{turn}/", name="turn poll", headers={"HX-Request": "true"}
                )
                if polled.status_code != 200 or PENDING not in polled.text:
                    return

    environment = Environment(user_classes=[Person], host=host)
    runner = environment.create_local_runner()
    runner.start(users, spawn_rate=users)
    began = time.monotonic()
    gevent.sleep(seconds)
    runner.quit()
    elapsed = time.monotonic() - began
    stats = environment.stats
    kinds = {
        name: {
            "requests": entry.num_requests,
            "failures": entry.num_failures,
            "p50_ms": entry.get_response_time_percentile(0.5),
            "p99_ms": entry.get_response_time_percentile(0.99),
        }
        for (name, _method), entry in sorted(stats.entries.items())
    }
    return {
        "seconds": elapsed,
        "users": users,
        "requests": stats.total.num_requests,
        "failures": stats.total.num_failures,
        "requests_per_s": stats.total.num_requests / elapsed,
        "p50_ms": stats.total.get_response_time_percentile(0.5),
        "p99_ms": stats.total.get_response_time_percentile(0.99),
        "kinds": kinds,
        "errors": [
            f"{error.occurrences}× {error.name}: {error.error}" for error in stats.errors.values()
        ],
    }


def _csrf_field(html: str) -> str:
    found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
    return found.group(1) if found else ""


if __name__ == "__main__":
    # python -m bench.load HOST USERS SECONDS, the owner's name and password from the environment.
    host, users, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    figures = swarm_run(
        host=host,
        users=users,
        seconds=seconds,
        username=os.environ.get("SILENTSTAR_OWNER_USERNAME") or "owner",
        password=os.environ["SILENTSTAR_OWNER_PASSWORD"],
    )
    print(json.dumps(figures), flush=True)
