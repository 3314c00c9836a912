"""The offline companion: answers when neither an API key nor a local model server is set, so
the whole loop works on a laptop.

Pure and deterministic: no ORM, no I/O, no clock, no randomness; the same input gives the same
reply. ``silentstar.claude.complete`` calls ``reply`` instead of the API when
``settings.COMPANION_OFFLINE`` is true. The reply is written in the tag language, so the page
shows it like any other: it acknowledges the person's message, quotes what was recalled, and
asks for recalls the person pointed at. That it is offline is said around the reply, not in it
(the chat's badge; the inspector, from the turn's model ``offline``), so no preamble fills the
Recent pools or pads a search hit. It writes no knowledge tags: nothing of an offline reply
becomes working memory.

What it reads: the text of the last user message in ``messages`` (a string, or the ``text``
blocks of a content list; an ``image`` block is noticed but not looked at). That text is the
assembled user message, in Markdown sections, each a level-2 heading on a line of its own and
running until the next of these six headings (other ``##`` lines are text, so fragments and
messages may hold Markdown of their own)::

    ## Lingering      working memory by score
    ## Summaries      Mirror output for what is older than the recent window
    ## Recalled       what the message names, then last turn's recall results (below)
    ## Recent         the conversation
    ## Now            the current time in words
    ## Message        who wrote it, then the person's message verbatim (always last)

Sections may be missing or empty. ``## Message`` comes last and runs to the end of the text,
whatever its own lines look like; when its first line is a name and a colon alone (``luna:``),
that is who wrote it, and the message is what follows. Text with none of these headings is
taken as the message itself. Content blocks of one message are joined with a newline.

``## Recalled`` holds one entry per fragment: a level-3 heading with the fragment's key and, in
parentheses, the tier or anything else the assembler wants to say, then the tier text (a
``###`` line without the parenthesised note is text, not an entry)::

    ## Recalled
    ### fairy (inventory)
    Fairies keep the old bargains. They never say thank you.
    ### moon (ambient, neighbour of fairy)
    The moon hangs over the lake.

The key is everything before `` (`` on the heading line. An entry with no text under it (say,
``### ghost (not found)``) is reported as nothing having come back for that key.

What it asks for: every ``[key]`` in the person's message (the way ambient prose names
fragments) and the word after "remember" become ``recall(key)`` calls in processing text, outside
the display tags, so the next turn's ``## Recalled`` carries them. The word after "remember" is
the first of the next four that is not a little word (``gem.words.STOP_WORDS``): "what do you
remember about the physio?" looks up ``physio``. "Remember to …" and "remember that I …" ask for
something to be kept, not looked up, and look up nothing.
"""

import re

from gem.words import STOP_WORDS
from heart.assemble import WRITING_FIRST_AFTER, WRITING_FIRST_BEFORE

ECHO_LIMIT = 200  # characters of the person's message quoted back
QUOTE_LIMIT = 240  # characters of a recalled fragment's first sentence

SECTIONS = ("Lingering", "Summaries", "Recalled", "Recent", "Now", "Message", "Writing first")
MESSAGE, RECALLED, WRITING_FIRST = "Message", "Recalled", "Writing first"

_SECTION_RE = re.compile(rf"^##[ \t]+({'|'.join(SECTIONS)})[ \t]*$", re.MULTILINE)
_ENTRY_RE = re.compile(r"^###[ \t]+(.+?)[ \t]+\(([^()\n]*)\)[ \t]*$", re.MULTILINE)
_ACTOR_RE = re.compile(r"([^\W\d_][\w'’ -]{0,39}):")
_TAG_RE = re.compile(r"</?[^\W\d_][\w'’-]*>")
_CALL_RE = re.compile(r"(?i)(?<!\w)(recall|search)\(")
_SENTENCE_END_RE = re.compile(r"[.!?…][\"'”’)\]]*(?=\s)")
_BRACKET_KEY_RE = re.compile(r"\[([^\[\]\n]{1,80})\]")
_REMEMBER_RE = re.compile(r"(?i)(?<!\w)remember\s+((?:\w[\w'’-]*\s+){0,3})(\w[\w'’-]*)")


def reply(*, system: list[dict], messages: list[dict]) -> str:
    """The offline companion's tagged answer to the last user message."""
    del system  # the wake text is for Claude; the offline companion has nothing to wake up to
    text, has_image = _last_user_text(messages)
    sections = sections_of(text)
    if WRITING_FIRST in sections:  # her own turn: nobody wrote, and she says why she writes
        said = sections[WRITING_FIRST]
        reason = " ".join(
            said.removeprefix(WRITING_FIRST_BEFORE).removesuffix(WRITING_FIRST_AFTER).split()
        )
        return f"<say>I wanted to write first: {_safe(reason)}</say>"
    actor, message = message_of(sections.get(MESSAGE, text if not sections else ""))
    recalled = recalled_entries(sections.get(RECALLED, ""))

    parts: list[str] = []
    said: list[str] = []
    echo = _quote(message, ECHO_LIMIT)
    if echo:
        to = f", {_quote(actor, 40)}" if actor else ""
        said.append(f"I got your message{to}: “{echo}”")
    elif not has_image:
        said.append("Your message came through empty.")
    if has_image:
        said.append("An image came with it; the offline companion cannot look at images.")
    parts.append(f"<say>{' '.join(said)}</say>")
    if recalled:
        lines = ["Recalled:"]
        for key, body in recalled:
            sentence = _quote(first_sentence(body), QUOTE_LIMIT)
            lines.append(f"{_safe(key)} — “{sentence}”" if sentence else f"{_safe(key)} — nothing")
        parts.append("<narrate>" + "\n".join(lines) + "</narrate>")
    parts.extend(_recall_call(key) for key in recall_keys(message))
    return "\n".join(parts)


def sections_of(text: str) -> dict[str, str]:
    """The sections of an assembled user message, by heading (see the module docstring)."""
    headings = list(_SECTION_RE.finditer(text))
    sections: dict[str, str] = {}
    for index, heading in enumerate(headings):
        last = heading[1] in (MESSAGE, WRITING_FIRST) or index + 1 == len(headings)
        end = len(text) if last else headings[index + 1].start()
        sections.setdefault(heading[1], text[heading.end() : end].strip("\n"))
        if heading[1] in (MESSAGE, WRITING_FIRST):
            break
    return sections


def message_of(section: str) -> tuple[str, str]:
    """``(actor, message)`` from a ``## Message`` section; the actor is "" when not named."""
    first, newline, rest = section.partition("\n")
    if newline and (match := _ACTOR_RE.fullmatch(first.strip())):
        return match[1], rest
    return "", section


def recalled_entries(section: str) -> list[tuple[str, str]]:
    """``(key, text)`` for each ``### key (note)`` entry of a ``## Recalled`` section."""
    headings = list(_ENTRY_RE.finditer(section))
    entries: list[tuple[str, str]] = []
    for index, heading in enumerate(headings):
        end = headings[index + 1].start() if index + 1 < len(headings) else len(section)
        entries.append((heading[1].strip(), section[heading.end() : end].strip()))
    return entries


def first_sentence(text: str) -> str:
    """The text up to its first sentence end (or its first paragraph), whitespace tidied."""
    paragraph = text.strip().split("\n\n", 1)[0]
    if end := _SENTENCE_END_RE.search(paragraph):
        paragraph = paragraph[: end.end()]
    return " ".join(paragraph.split())


def recall_keys(message: str) -> list[str]:
    """Keys the person pointed at: ``[key]`` mentions and "remember key", in order, once each."""
    found: list[tuple[int, str]] = []
    for match in _BRACKET_KEY_RE.finditer(message):
        found.append((match.start(), match[1].strip()))
    for match in _REMEMBER_RE.finditer(message):
        words = [*match[1].split(), match[2]]
        if _asks_to_keep(words):
            continue
        key = next((word for word in words if word.casefold() not in STOP_WORDS), "")
        found.append((match.start(), key))
    keys = (key for _, key in sorted(found) if key and '"' not in key)
    return list(dict.fromkeys(keys))


def _asks_to_keep(words: list[str]) -> bool:
    """Whether the words after "remember" ask for something to be kept rather than looked up:
    "remember to call her", "remember that I hate cilantro" (but not "remember that song")."""
    first, *rest = (word.casefold() for word in words)
    return first == "to" or (first == "that" and bool(rest) and rest[0] in STOP_WORDS)


def _recall_call(key: str) -> str:
    if re.fullmatch(r"[\w'’-]+", key):
        return f"recall({key})"
    return f'recall("{key}")'


def _last_user_text(messages: list[dict]) -> tuple[str, bool]:
    for message in reversed(messages or []):
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content, False
        texts, has_image = [], False
        for block in content or []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text":
                texts.append(str(block.get("text", "")))
            elif block.get("type") == "image":
                has_image = True
        return "\n".join(texts), has_image
    return "", False


def _safe(text: str) -> str:
    """Text that cannot break out of the display tag around it or call anything."""
    text = _TAG_RE.sub(" ", text)
    return _CALL_RE.sub(lambda match: f"{match[1]} (", text)


def _quote(text: str, limit: int) -> str:
    text = " ".join(_safe(text).split())
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text
