"""Writing the draft format (``lens.draft_read``): the Markdown the Lens prints for fragments.

Read back with ``lens.draft_read.draft_parse`` it changes nothing: text that cannot be written
plainly is fenced, relations that would not survive a line are written as JSON strings.
"""

import json
from collections.abc import Iterable

from lens.draft_read import EDGES, HEADING, NOTES, TIERS, Draft, DraftEdge, DraftFragment, is_blank


def draft_render(draft: Draft) -> str:
    """The draft as Markdown: what ``manage.py lens KEY`` prints."""
    parts = [draft.preface] if draft.preface else []
    parts.extend(_fragment_render(fragment) for fragment in draft.fragments)
    return "\n\n".join(parts) + "\n"


def _fragment_render(fragment: DraftFragment) -> str:
    blocks = [f"# {fragment.key}"]
    for tier in TIERS:
        if tier in fragment.tiers:
            blocks.append(f"## {tier}")
            if fragment.tiers[tier]:
                blocks.append(_tier_text(fragment.tiers[tier]))
    if fragment.edges is not None:
        blocks.append(f"## {EDGES}")
        if fragment.edges:
            blocks.append("\n".join(_edge_line(fragment.key, edge) for edge in fragment.edges))
    for name in NOTES:
        if name in fragment.notes:
            blocks.append(f"## {name}")
            if fragment.notes[name]:
                blocks.append(fragment.notes[name])
    return "\n\n".join(blocks)


def _tier_text(text: str) -> str:
    lines = text.split("\n")
    plain = (
        not is_blank(lines[0])
        and not is_blank(lines[-1])
        and not lines[0].startswith(("~~~", "```"))
        and not any(HEADING.match(line) for line in lines)
    )
    if plain:
        return text
    longest = max((len(line) for line in lines if line and set(line) == {"~"}), default=0)
    fence = "~" * max(3, longest + 1)
    return f"{fence}\n{text}\n{fence}"


def _edge_line(key: str, edge: DraftEdge) -> str:
    arrow, other = ("→", edge.target) if edge.source == key else ("←", edge.source)
    relation = edge.relation
    if not relation:
        return f"- {arrow} {other}"
    if relation != relation.strip() or "\n" in relation or "\r" in relation or relation[0] == '"':
        relation = json.dumps(relation, ensure_ascii=False)
    return f"- {arrow} {other}: {relation}"


def edges_ordered(key: str, edges: Iterable[DraftEdge]) -> list[DraftEdge]:
    """Edges from the fragment first, then edges to it, each by the other key."""
    return sorted(edges, key=lambda e: (e.source != key, e.target if e.source == key else e.source))
