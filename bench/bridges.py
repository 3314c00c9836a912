"""``python -m bench bridges``: import a long SillyTavern chat as ``manage.py import_from`` does.

``sillytavern_chat_write`` writes a chat of ``messages`` messages in SillyTavern's JSONL: a header
line, then the person and the companion in turn a minute apart, every reply with three swipes
(the second chosen) and an ``extra`` of its own, as SillyTavern writes them. ``bridges_measure``
reads, plans and imports it into the configured (throwaway) stores, then once more (which adds
nothing), and reports the time, messages per second and the process's peak memory.

``lorebook_write`` writes a SillyTavern World Info file whose entries name each other, and
``lorebooks_measure`` times reading and planning two of them as the preview does (``LOREBOOKS``:
a world book of 1,000 entries, 2 MB, and 100,000 small entries), with the preview's draft diff
and the preview ``import_from`` prints; ``lorebook_said`` says one's figures in a line.
"""

import json
import random
import resource
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from transfer.bridges import bridge_import, bridge_plan, bundle_read
from transfer.management.commands.import_from import plan_said

START = datetime(2024, 3, 1, 18, 0, tzinfo=UTC)
WORDS = (
    "tea garden letter sea lighthouse lace stairs rain window lamp quiet walk friday music "
    "sewing crochet dress blanket morning evening tired glad plan call council tower keeper "
    "shop train bread soup book"
).split()
USER, CHARACTER = "Luna", "Seraphina"
SPEAKERS = {USER: "luna", CHARACTER: "claude"}


def sillytavern_chat_write(path: Path, *, messages: int, seed: int = 7) -> Path:
    """A SillyTavern chat of ``messages`` messages at ``path``."""
    pick = random.Random(seed)
    with path.open("w", encoding="utf-8") as out:
        header = {
            "user_name": USER,
            "character_name": CHARACTER,
            "create_date": "2024-3-1@18h00m00s",
            "chat_metadata": {"note_prompt": "", "integrity": "a1b2"},
        }
        out.write(json.dumps(header) + "\n")
        for n in range(messages):
            user = n % 2 == 0
            said = " ".join(pick.choices(WORDS, k=pick.randint(8, 40)))
            message = {
                "name": USER if user else CHARACTER,
                "is_user": user,
                "is_system": False,
                "send_date": (START + timedelta(minutes=n)).isoformat(),
                "mes": said,
                "extra": {} if user else {"api": "claude", "model": "claude-opus-5-5"},
            }
            if not user:
                message |= {"swipes": [f"first {said}", said, f"third {said}"], "swipe_id": 1}
            out.write(json.dumps(message) + "\n")
    return path


def bridges_measure(*, path: Path, progress: Callable[[str], None]) -> dict:
    """Import the chat into the configured (empty, throwaway) stores, then again; the figures.

    Peak memory is the process's maximum resident set (``getrusage``'s ``ru_maxrss``), read
    before the import (Django and the migrated stores) and after it."""
    before_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    data = path.read_bytes()
    reported = {"step": 0}

    def stage(done: int, total: int) -> None:
        step = max(total // 10, 1)
        if done == total or done // step != reported["step"]:
            reported["step"] = done // step
            progress(f"  messages {done:,}/{total:,}")

    def run() -> tuple[dict, dict[str, float], object]:
        began = time.perf_counter()
        bundle = bundle_read(format="sillytavern", data=data)
        read = time.perf_counter()
        plan = bridge_plan(bundle, file_name=path.name, format="sillytavern", speakers=SPEAKERS)
        planned = time.perf_counter()
        report = bridge_import(plan, file_sha256="0" * 64, progress=stage)
        done = time.perf_counter()
        seconds = {"read": read - began, "plan": planned - read, "write": done - planned}
        return report.counts, seconds, plan

    counts, seconds, plan = run()
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    estimate = plan.estimate
    progress("again, which must add nothing...")
    again, again_seconds, _ = run()
    total = sum(seconds.values())
    return {
        "messages": len(plan.bundle.messages),
        "events": counts["events"],
        "turns": len(plan.turns),
        "seconds": total,
        "stages": seconds,
        "messages_per_s": len(plan.bundle.messages) / total,
        "peak_rss_mb": peak_kb / 1024,
        "before_rss_mb": before_kb / 1024,
        "again_seconds": sum(again_seconds.values()),
        "again_events": again["events"],
        "file_mb": path.stat().st_size / 2**20,
        "estimate_about": estimate.cost_about,
        "estimate_most": estimate.cost_most,
        "estimate_calls": estimate.calls,
        "estimate_calls_most": estimate.calls_most,
    }


SYLLABLES = (
    "ka ra mel dor vin tha li sen gar ost bel cor an ith mor val ere une sol fen ro "
    "dri ael wyn har ben"
).split()
PLACES = "Harbour Tower Well Gate Hollow Ford Keep Market Bridge Grove".split()


def lorebook_write(
    path: Path, *, entries: int, prose_chars: int, mentions: int, seed: int = 7
) -> Path:
    """A SillyTavern World Info file of ``entries`` entries at ``path``, each a name of its own
    (a person, or a place of two words), two keys and a secondary one, and about ``prose_chars``
    of prose in paragraphs that name ``mentions`` other entries (by name or by key, in any
    case). Only the fields read here are written, as SillyTavern fills the others."""
    pick = random.Random(seed)
    names: list[str] = []
    seen: set[str] = set()
    while len(names) < entries:
        name = "".join(pick.choices(SYLLABLES, k=pick.randint(2, 4))).capitalize()
        if pick.random() < 0.3:
            name = f"{name} {pick.choice(PLACES)}"
        if name.casefold() not in seen:
            seen.add(name.casefold())
            names.append(name)
    written = {}
    for uid, name in enumerate(names):
        words: list[str] = []
        size = 0
        while size < prose_chars:
            word = pick.choice(WORDS)
            if pick.random() < mentions * 6 / max(prose_chars, 1):
                other = pick.choice(names)
                word = pick.choice((other, other.lower(), other.split()[0]))
            words.append(word + ("." if pick.random() < 0.08 else ""))
            size += len(word) + 1
            if pick.random() < 0.01:
                words.append("\n\n")
        content = " ".join(words).replace(" \n\n ", "\n\n").strip()
        first = name.split()[0]
        written[str(uid)] = {
            "uid": uid,
            "key": list(dict.fromkeys([name, first.lower()])),
            "keysecondary": [pick.choice(WORDS)],
            "comment": name,
            "content": content[0].upper() + content[1:] if content else content,
            "constant": uid % 50 == 0,
            "disable": uid % 97 == 1,
        }
    path.write_text(json.dumps({"name": "Bench world", "entries": written}))
    return path


def lorebook_measure(*, path: Path) -> dict:
    """Read and plan the lorebook at ``path`` as the preview does, compare its draft with the
    Gem as the preview's diff does, and say the preview as ``import_from`` prints it; the
    seconds of each, and what the plan holds."""
    data = path.read_bytes()
    began = time.perf_counter()
    bundle = bundle_read(format="sillytavern", data=data)
    read = time.perf_counter()
    plan = bridge_plan(bundle, file_name=path.name, format="sillytavern")
    planned = time.perf_counter()
    diff = plan.draft_diff
    compared = time.perf_counter()
    said = plan_said(plan)
    done = time.perf_counter()
    return {
        "entries": len(bundle.entries),
        "file_mb": len(data) / 2**20,
        "fragments": len(plan.fragments),
        "edges": sum(len(fragment.edges) for fragment in plan.fragments),
        "edges_added": len(diff.edges_added) if diff else 0,
        "stages": {
            "read": read - began,
            "plan": planned - read,
            "diff": compared - planned,
            "said": done - compared,
        },
        "seconds": compared - began,
        "said": said,
    }


LOREBOOKS = {  # entries, characters of prose in each, other entries each names
    "world book": (1_000, 1_900, 6),
    "small entries": (100_000, 120, 2),
}


def lorebooks_measure(
    *, folder: Path, progress: Callable[[str], None], sizes: dict = LOREBOOKS
) -> list[dict]:
    """Write each lorebook of ``sizes`` in ``folder`` and measure its planning."""
    results = []
    for entries, prose_chars, mentions in sizes.values():
        progress(f"writing and planning a lorebook of {entries:,} entries...")
        path = lorebook_write(
            folder / f"lorebook-{entries}.json",
            entries=entries,
            prose_chars=prose_chars,
            mentions=mentions,
        )
        results.append(lorebook_measure(path=path))
    return results


def lorebook_said(result: dict) -> str:
    """One lorebook's figures in a line."""
    stages = result["stages"]
    return (
        f"SillyTavern lorebook, {result['entries']:,} entries ({result['file_mb']:,.1f} MB), "
        f"read and planned in {result['seconds']:,.1f} s (read {stages['read']:,.1f} s, plan "
        f"{stages['plan']:,.1f} s, the preview's draft diff {stages['diff']:,.1f} s): "
        f"{result['fragments']:,} fragments, {result['edges']:,} edges proposed; the preview "
        f"said in {len(result['said'].splitlines()):,} lines in {stages['said']:,.1f} s"
    )
