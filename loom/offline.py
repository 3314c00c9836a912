"""The offline Loom: answers a facet agent's call when neither an API key nor a local model
server is set, so every flow (a draft's diff, apply, edit, drop; the Weaver's pattern in the
queue) can be tried on a laptop.

Pure and deterministic: no Django, no I/O, no clock. It invents nothing about the fragment: its
notes say it is offline and repeat what it was asked, and its draft adds one clearly marked
placeholder line to the end of the fragment's inventory (the inventory it is given, kept
exactly: fenced, so any text reads back as it was). The Weaver's answer also proposes one
placeholder pattern. The answer has the shape of ``loom.answer``, so everything after the
call runs unchanged.
"""

import re

OFFLINE_LABEL = "(offline Loom)"
FENCE_LINE = re.compile(r"^~+$")

NAMES = {"cataloguer": "Cataloguer", "weaver": "Weaver", "researcher": "Researcher"}


def offline_answer(*, agent: str, key: str, inventory: str, question: str, images: int) -> str:
    """Notes, a draft adding a placeholder line to ``key``'s inventory, and for the Weaver one
    placeholder pattern."""
    name = NAMES[agent]
    asked = " ".join(question.split()) or "nothing in particular"
    notes = [
        f"{OFFLINE_LABEL} The {name} is offline: no API key is set, so nothing was read or "
        "looked up. This answer is a placeholder, to try the flow.",
        f"Asked: {asked}",
    ]
    if images:
        notes.append(f"Photos sent: {images} (not looked at offline).")
    placeholder = f"- {OFFLINE_LABEL} placeholder from the {name}: {asked}"
    new_inventory = f"{inventory}\n{placeholder}" if inventory else placeholder
    answer = [
        "=== notes ===",
        *notes,
        "",
        "=== draft ===",
        f"# {key}",
        "",
        "## inventory",
        "",
        *_fenced(new_inventory),
    ]
    if agent == "weaver":
        answer += [
            "",
            "=== patterns ===",
            f"- {OFFLINE_LABEL} placeholder pattern around {key}",
            "  reason: offline, to try the queue",
        ]
    return "\n".join(answer) + "\n"


def _fenced(text: str) -> list[str]:
    """The text between fences longer than any line of only ``~`` inside, so it is kept
    exactly whatever it holds (headings, blank lines, fences)."""
    longest = max((len(line) for line in text.split("\n") if FENCE_LINE.match(line)), default=2)
    fence = "~" * max(3, longest + 1)
    return [fence, text, fence]
