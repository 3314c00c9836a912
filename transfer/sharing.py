"""What an export made for sharing leaves out (``manage.py export DIR --for-sharing``).

The full export carries the raw log and its corrections, so that an import gives back the
installation whole. One made to share with someone leaves out what was taken back or forgotten:

- a message taken back (not a reply set aside for another): its text and image, the text of its
  corrections, the partial reply of its turn, what an import from another companion kept of it,
  and its words wherever they were copied (summaries, suggestions, working memory), in place of
  which stands ``LEFT_OUT``;
- the working memory written from such a message, and every item and suggestion forgotten
  (``gem.models.Forgotten``): their words, and what Mira's import kept of them;
- the words kept as forgotten;
- every context snapshot: they hold what was sent to Claude then, taken-back words included;
- in the reasons she wrote first, the words of messages taken back.

A purged message's text is gone from the log already. The rows stay (their ids, times and
speakers), so the export imports as any, with the words left out.
"""

import re
from dataclasses import dataclass

from events.models import Correction, Event
from events.render import copied_forms, whole_words
from events.selectors import views_of
from gem.models import Forgotten
from gem.selectors import identities_current

LEFT_OUT = "[left out]"
SOURCE_RE = re.compile(r"^(working memory|suggestion) #(\d+)$")


@dataclass(frozen=True)
class LeftOut:
    events: frozenset[int]  # taken back
    images: frozenset[str]  # of those events
    working_memory: frozenset[int]  # forgotten
    suggestions: frozenset[int]  # forgotten
    words: re.Pattern | None  # what the events taken back said, wherever copied

    def text(self, text: str) -> str:
        return self.words.sub(LEFT_OUT, text) if self.words and text else text


def left_out_read() -> LeftOut:
    """What an export for sharing leaves out, read once before the rows are written."""
    corrected = set(Correction.objects.values_list("event_id", flat=True))
    rows = list(Event.objects.filter(pk__in=corrected).values_list("pk", "actor", "content"))
    views = views_of(rows)
    taken_back = {pk for pk, view in views.items() if view.taken_back}
    images = set(
        Event.objects.filter(pk__in=taken_back).exclude(image="").values_list("image", flat=True)
    )
    edits: dict[int, list[str]] = {}
    for pk, text in Correction.objects.filter(event_id__in=taken_back, kind="edit").values_list(
        "event_id", "text"
    ):
        edits.setdefault(pk, []).append(text)
    said = [
        (actor, text)
        for pk, actor, content in rows
        if pk in taken_back
        for text in (content, *edits.get(pk, ()))
    ]
    forgotten: dict[str, set[int]] = {"working memory": set(), "suggestion": set()}
    for source in Forgotten.objects.values_list("source", flat=True):
        if match := SOURCE_RE.match(source):
            forgotten[match[1]].add(int(match[2]))
    return LeftOut(
        events=frozenset(taken_back),
        images=frozenset(images),
        working_memory=frozenset(forgotten["working memory"]),
        suggestions=frozenset(forgotten["suggestion"]),
        words=whole_words(copied_forms(said, identities_current().sides)),
    )


def row_shared(file: str, row: dict, left: LeftOut) -> dict | None:
    """``row`` of ``file`` as an export for sharing writes it; None: left out whole."""
    match file:
        case "snapshots.jsonl":
            return None
        case "events.jsonl" if row["id"] in left.events:
            return {**row, "content": "", "image": ""}
        case "corrections.jsonl" if row["event"] in left.events:
            return {**row, "text": ""}
        case "turns.jsonl" if row["event"] in left.events or row["reply_event"] in left.events:
            return {**row, "partial_text": ""}
        case "imported_messages.jsonl" if row["event"] in left.events:
            return {**row, "kept": {}}
        case "forgotten.jsonl":
            return {**row, "content": LEFT_OUT}
        case "working_memory.jsonl":
            if row["id"] in left.working_memory or row["event_id"] in left.events:
                return {**row, "content": LEFT_OUT, "subject": ""}
            return {**row, "content": left.text(row["content"])}
        case "mira_entries.jsonl" if row["working_memory"] in left.working_memory:
            return {**row, "entry": {}, "written": {}}
        case "suggestions.jsonl":
            if row["id"] in left.suggestions:
                return {**row, "content": LEFT_OUT}
            return {**row, "content": left.text(row["content"])}
        case "summaries.jsonl":
            return {**row, "content": left.text(row["content"])}
        case "nudges.jsonl":  # the reason quotes a plan or proposals, whose words may be gone
            return {**row, "said": left.text(row["said"])}
    return row
