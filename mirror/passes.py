"""The Mirror's passes: what each is sent, which model answers, and how a chunk goes through.

Read wide, compress narrow: the chunk's turns are what is reflected; the turns just before it
are sent (to the clean and summarise passes) under a "Context" heading, read-only, and never
become part of the summary's event range. The summarise pass also reads the previous summary of
its level, for continuity, and in the three-pass route both the compressed and the cleaned chunk
(the seed's role split: the strong model catches what compression let go).

Every call goes through ``silentstar.claude.complete``; with no API key the offline Mirror
(``mirror.offline``) answers instead, in the same formats. The instructions of each pass are the
newest ``MirrorPrompt`` of its kind (the owner edits them in the admin; the shipped defaults are
in ``mirror/defaults/``).
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from gem.selectors import agent_prompt
from mirror import offline
from mirror.models import MirrorPrompt
from mirror.output import Output, output_parse
from mirror.route import (
    CLEAN,
    COMPRESS,
    MERGE,
    PASSES,
    SUMMARISE,
    THREE_PASS,
    UNNAMED,
    Turn,
    do_density,
    route_for,
)
from silentstar import claude

DEFAULTS = Path(__file__).resolve().parent / "defaults"
CONTEXT = "Context (read only: earlier turns, do not summarise them)"
PREVIOUS = "Previous summary (read only, for continuity)"
CHUNK = "Chunk"
CLEANED = "Chunk, cleaned"
COMPRESSED = "Chunk, compressed"
TO_MERGE = "Summaries to merge"


@dataclass(frozen=True)
class PassResult:
    role: str
    model: str
    text: str
    usage: claude.Usage
    offline: bool


@dataclass(frozen=True)
class Reflection:
    route: str
    density: float
    outputs: dict[str, str]  # pass role → text it answered
    output: Output


def model_for(role: str) -> str:
    """The model setting of a pass role; merges use the summarising model."""
    return {
        CLEAN: settings.MIRROR_CLEAN_MODEL,
        COMPRESS: settings.MIRROR_COMPRESS_MODEL,
    }.get(role, settings.MIRROR_SUMMARISE_MODEL)


def prompt_current(kind: str) -> str:
    """The newest saved instructions of a pass (the shipped default if none is saved)."""
    return agent_prompt(MirrorPrompt, kind=kind, defaults=DEFAULTS).text


def transcript(turns: Sequence[Turn]) -> str:
    """Display lines, ``#12 luna: …`` and ``#13 claude (say): …``; a blank line between turns."""
    blocks = []
    for turn in turns:
        lines = []
        for line in turn.lines:
            kind = "" if (line.kind == "say" and not line.companion) else f" ({line.kind})"
            text = " ".join(line.text.split())
            lines.append(f"#{line.event_id} {line.actor or UNNAMED}{kind}: {text}")
        if lines:
            blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def pass_call(*, role: str, sections: list[tuple[str, str]]) -> PassResult:
    """One pass: its instructions as the system prompt, the sections as the user message."""
    kind = role
    sections = [(title, body) for title, body in sections if body.strip()]
    user_text = "\n\n".join(f"## {title}\n{body.strip()}" for title, body in sections)
    system_text = prompt_current(kind)
    reply = claude.complete(
        component=f"mirror-{role}",
        system=[{"type": "text", "text": system_text, "cache_control": {"type": "ephemeral"}}],
        messages=[{"role": "user", "content": user_text}],
        offline_answer=lambda: offline.answer(kind, sections),
        model=model_for(role),
        max_tokens=settings.MIRROR_MAX_TOKENS,
    )
    return PassResult(role, reply.model, reply.text, reply.usage, offline=reply.offline)


Record = Callable[[PassResult, dict[str, str]], None]


def chunk_reflect(
    *,
    turns: Sequence[Turn],
    context: Sequence[Turn],
    previous: str,
    done: dict[str, str],
    record: Record,
) -> Reflection:
    """Take a chunk through its route's passes, skipping those already ``done`` (a resume).

    ``record`` is called after each pass with its result and every output so far, so the
    caller can keep them; ``previous`` is the text of the previous summary at this level.
    """
    density = do_density(line for turn in turns for line in turn.lines)
    route = route_for(density)
    outputs = {role: text for role, text in done.items() if role in PASSES[route]}
    chunk_text = transcript(turns)
    context_text = transcript(context)

    def run(role: str, sections: list[tuple[str, str]], fallback: str) -> None:
        if role in outputs:
            return
        result = pass_call(role=role, sections=sections)
        outputs[role] = result.text.strip() or fallback
        record(result, dict(outputs))

    run(CLEAN, [(CONTEXT, context_text), (CHUNK, chunk_text)], chunk_text)
    if route == THREE_PASS:
        run(COMPRESS, [(CLEANED, outputs[CLEAN])], outputs[CLEAN])
    final = [(PREVIOUS, previous), (CONTEXT, context_text)]
    if route == THREE_PASS:
        final.append((COMPRESSED, outputs[COMPRESS]))
    final.append((CLEANED, outputs[CLEAN]))
    run(SUMMARISE, final, "")
    return Reflection(route, density, outputs, output_parse(outputs[SUMMARISE]))


def merge_reflect(*, parts: Sequence[tuple[str, str]], previous: str) -> tuple[PassResult, Output]:
    """Merge summaries (``(title, text)``, oldest first) into one at the next level."""
    body = "\n\n".join(f"### {title}\n{text.strip()}" for title, text in parts)
    result = pass_call(role=MERGE, sections=[(PREVIOUS, previous), (TO_MERGE, body)])
    return result, output_parse(result.text)
