"""The offline Mirror: answers each pass when no API key is set, so the whole pipeline runs.

Pure and deterministic: no ORM, no I/O, no clock. Extractive, never inventive: it keeps and cuts
lines of the transcript it is given, and everything it writes says it is offline. It reads the
same request the model would (``sections``: ``(title, body)`` pairs, see ``mirror.passes``) and
answers in the same formats, so the output parser and everything after it run unchanged.
"""

import re

from mirror.route import CLEAN, COMPRESS, MERGE, SUMMARISE

OFFLINE_LABEL = "(offline summary)"
OFFLINE_MODEL = "offline"
NOTE_LIMIT = 8  # lines quoted as notes
EXCERPT_WORDS = 20
PIN_WORDS = re.compile(r"\b(always|never|remember|promise|promised|every)\b", re.IGNORECASE)

_LINE_RE = re.compile(r"^#(\d+)(?:-(\d+))?\s+([^:()]+?)(?:\s+\((say|do|narrate)\))?:\s?(.*)$")
_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+")


def answer(kind: str, sections: list[tuple[str, str]]) -> str:
    """What the offline Mirror answers to a pass of ``kind`` given these sections."""
    bodies = [body for title, body in sections if not _is_context(title)]
    text = bodies[-1] if bodies else ""
    if kind == CLEAN:
        return _clean(text)
    if kind == COMPRESS:
        return _compress(text)
    if kind == SUMMARISE:
        return _summarise(text)
    if kind == MERGE:
        return _merge(text)
    return text


def _is_context(title: str) -> bool:
    return title.lower().startswith(("context", "previous"))


def _excerpt(text: str) -> str:
    first = _SENTENCE_RE.split(text.strip(), maxsplit=1)[0]
    words = first.split()
    return " ".join(words[:EXCERPT_WORDS]) + (" …" if len(words) > EXCERPT_WORDS else "")


def _clean(text: str) -> str:
    kept: list[str] = []
    for line in text.splitlines():
        line = " ".join(line.split())
        if line and (not kept or kept[-1] != line):
            kept.append(line)
    return "\n".join(kept)


def _compress(text: str) -> str:
    out: list[str] = []
    run: list[re.Match] = []

    def flush() -> None:
        if run:
            first, last = run[0], run[-1]
            span = (
                first[1] if first[1] == (last[2] or last[1]) else f"{first[1]}-{last[2] or last[1]}"
            )
            out.append(f"#{span} {first[3]} (do): {_excerpt(first[5])}")
            run.clear()

    for line in text.splitlines():
        match = _LINE_RE.match(line.strip())
        if match and match[4] in ("do", "narrate"):
            if run and run[-1][3] != match[3]:
                flush()
            run.append(match)
            continue
        flush()
        if line.strip():
            out.append(line.strip())
    flush()
    return "\n".join(out)


def _summarise(text: str) -> str:
    lines = [m for line in text.splitlines() if (m := _LINE_RE.match(line.strip()))]
    if not lines:
        return f"## Shape\n{OFFLINE_LABEL} Nothing was shown in this stretch."
    speakers = list(dict.fromkeys(m[3] for m in lines))
    said = [m for m in lines if m[4] in (None, "say")]
    quoted = said or lines
    shape = (
        f"{OFFLINE_LABEL} {len(lines)} lines between {', '.join(speakers)}, from "
        f"“{_excerpt(quoted[0][5])}” to “{_excerpt(quoted[-1][5])}”."
    )
    step = max(1, len(quoted) // NOTE_LIMIT)
    notes = [f"- {m[3]}: {_excerpt(m[5])}" for m in quoted[::step][:NOTE_LIMIT]]
    pins = [m for m in lines if m[4] is None and PIN_WORDS.search(m[5])]
    suggestions = [f"- pin: {_excerpt(m[5])}" for m in pins[:2]] or ["- none"]
    return "\n".join(["## Shape", shape, "## Notes", *notes, "## Suggestions", *suggestions])


def _merge(text: str) -> str:
    entries = [part.strip() for part in re.split(r"^### .*$", text, flags=re.MULTILINE)]
    shapes = [_excerpt(entry.replace(OFFLINE_LABEL, "")) for entry in entries if entry]
    shape = f"{OFFLINE_LABEL} {len(shapes)} summaries merged."
    return "\n".join(["## Shape", shape, "## Notes", *(f"- {s}" for s in shapes)])
