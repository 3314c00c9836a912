"""mem0's memories as its ``get_all()`` gives them: a JSON list of ``{id, memory, hash,
created_at, updated_at, user_id, agent_id, metadata, …}``, or that list under ``"results"``
(beside ``"relations"`` when its graph memory is on)."""

from transfer.bundle import BridgeError, Bundle, Memory
from transfer.formats.dates import moment_read, zone_of
from transfer.formats.reading import Checks, json_parsed, kind, text_decoded

MAPPED = frozenset({"id", "memory", "created_at"})


def mem0_read(data: bytes, *, zone: str) -> Bundle:
    """Every memory of a mem0 export; a time without an offset is in ``zone``."""
    tz = zone_of(zone)
    document = json_parsed(text_decoded(data))
    checks = Checks()
    if isinstance(document, list):
        listed, where, kept = document, "", {}
    elif isinstance(document, dict) and isinstance(document.get("results"), list):
        listed, where = document["results"], "results"
        kept = checks.kept(document, "", mapped={"results"})
    else:
        raise BridgeError(
            f"not a mem0 export: it holds {kind(document)}, "
            "not a list of memories nor an object with a results list"
        )
    memories = []
    first_of: dict[str, str] = {}
    for index, raw in enumerate(listed):
        item_where = f"{where}[{index}]"
        item = checks.object(raw, item_where)
        if item is None:
            continue
        memory_id = item.get("id")
        if isinstance(memory_id, int) and not isinstance(memory_id, bool):
            memory_id = str(memory_id)
        if not isinstance(memory_id, str) or not memory_id:
            checks.add(f"{item_where}.id", "missing" if memory_id is None else "must be a text")
        elif memory_id in first_of:
            checks.add(f"{item_where}.id", f"“{memory_id}” is already {first_of[memory_id]}")
        else:
            first_of[memory_id] = item_where
        text = checks.text(item, "memory", item_where)
        at = None
        if item.get("created_at") is not None:
            try:
                at = moment_read(item["created_at"], zone=tz)
            except ValueError as error:
                checks.add(f"{item_where}.created_at", str(error))
        memories.append(
            Memory(
                origin=f"mem0:{memory_id}",
                text=text,
                at=at,
                kept=checks.kept(item, item_where, mapped=MAPPED),
            )
        )
    checks.refuse()
    return Bundle(format="mem0", name="", memories=memories, kept=kept)
