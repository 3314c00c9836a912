"""Claude's prompt cache, by its documented rules, for the fake Messages API and its benchmark.

Pure: standard library and the project's pure modules only; the clock is handed in. The rules
are those of Anthropic's prompt-caching documentation (October 2026):

Prefix
    A request's prompt is a list of blocks in the order tools → system → messages: each tool
    definition is a block, a string ``system`` or message content is one text block, a list is
    its blocks in order. A cached prefix runs from the start up to and including a block marked
    ``cache_control``. Its key is the model and every block up to there (roles and message
    boundaries included, the ``cache_control`` marks left out): caches are per model.

Breakpoints
    At most ``MAX_BREAKPOINTS`` blocks may carry ``cache_control`` (``{"type": "ephemeral"}``,
    5 minutes; ``{"type": "ephemeral", "ttl": "1h"}``, an hour); a longer TTL may not come
    after a shorter one. A request that breaks these rules gets ``CacheRuleError``, the API's
    400 ``invalid_request_error``, and changes nothing.

Read
    The longest cached prefix that ends at one of the request's breakpoints or at a block
    boundary up to ``LOOKBACK_BLOCKS`` blocks before one (a prefix ending 20 blocks before a
    breakpoint is found, one ending 21 before is not: it needs a breakpoint of its own). A read
    refreshes that entry's TTL.

Write
    Each breakpoint writes the prefix up to it unless it is cached already (then its TTL is
    refreshed), and only when that prefix holds at least the model's minimum of tokens
    (``silentstar.pricing.cache_minimum``); below it nothing is written, and nothing says so.

Usage, as the API reports it
    ``cache_read_input_tokens``: the tokens of the prefix read; ``cache_creation_input_tokens``:
    those written, from the end of what was read to the last breakpoint that wrote, split in
    ``cache_creation`` by the TTL of the breakpoint whose segment (the blocks after the
    breakpoint before it, up to it) each token was written under; ``input_tokens``: the rest.
    The three add up to the whole prompt.

Tokens
    Counted the project's way (``silentstar.tokens.estimate_tokens``): a text block's text, a
    tool definition or any other block as its JSON (the ``cache_control`` mark left out), and an
    image a fixed ``IMAGE_TOKENS``.
"""

import hashlib
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from itertools import accumulate, pairwise

from silentstar.pricing import CACHE_MINIMUM_TOKENS, cache_minimum
from silentstar.tokens import estimate_tokens

MAX_BREAKPOINTS = 4
LOOKBACK_BLOCKS = 20
TTL_SECONDS = {"5m": 300, "1h": 3600}
IMAGE_TOKENS = 1_600  # what the API counts for a photo of about 1.15 megapixels


class CacheRuleError(ValueError):
    """A request the API refuses (400 ``invalid_request_error``) for its ``cache_control``."""


@dataclass(frozen=True, slots=True)
class CacheUsage:
    """What one request read from the cache, wrote to it (by TTL) and sent uncached."""

    cache_read_input_tokens: int
    ephemeral_5m_input_tokens: int
    ephemeral_1h_input_tokens: int
    input_tokens: int

    @property
    def cache_creation_input_tokens(self) -> int:
        return self.ephemeral_5m_input_tokens + self.ephemeral_1h_input_tokens

    @property
    def total(self) -> int:
        return self.cache_read_input_tokens + self.cache_creation_input_tokens + self.input_tokens

    def as_api(self) -> dict:
        """The input fields of the API's ``usage`` object."""
        return {
            "input_tokens": self.input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "cache_creation": {
                "ephemeral_5m_input_tokens": self.ephemeral_5m_input_tokens,
                "ephemeral_1h_input_tokens": self.ephemeral_1h_input_tokens,
            },
        }


@dataclass(frozen=True, slots=True)
class Block:
    """One block of a prompt: its key (what it adds to the prefix), tokens and cache mark."""

    key: str
    tokens: int
    cache_control: dict | None


@dataclass(slots=True)
class _Entry:
    ttl: int  # seconds
    expires: float


class PromptCache:
    """The cache of one account: entries by model and prefix, each with its TTL.

    ``minimums`` maps models to the fewest tokens a prefix needs to be cached (looked up as
    ``silentstar.pricing.cache_minimum`` does: a dated name finds its model); ``clock`` gives
    the time in seconds, so a benchmark can run on simulated time.
    """

    def __init__(
        self,
        minimums: Mapping[str, int] = CACHE_MINIMUM_TOKENS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.minimums = minimums
        self.clock = clock
        self._entries: dict[tuple[str, str], _Entry] = {}

    def apply(self, body: dict) -> CacheUsage:
        """Read and write the cache for one Messages API request body; its usage.

        Raises ``CacheRuleError`` (and changes nothing) for a request the API would refuse.
        """
        model = str(body.get("model", ""))
        blocks = prompt_blocks(body)
        marked = [index for index, block in enumerate(blocks) if block.cache_control is not None]
        ttls = _ttls_checked([blocks[index].cache_control for index in marked])
        now = self.clock()
        self._entries = {key: e for key, e in self._entries.items() if e.expires > now}

        keys, ends = _prefix_keys(model, blocks), list(accumulate(b.tokens for b in blocks))
        total = ends[-1] if ends else 0
        read_at = self._longest_cached(model, keys, marked)
        read = ends[read_at] if read_at is not None else 0
        if read_at is not None:
            entry = self._entries[(model, keys[read_at])]
            entry.expires = now + entry.ttl

        minimum = cache_minimum(self.minimums, model)
        written = {"5m": 0, "1h": 0}
        written_to = read
        for index, ttl in zip(marked, ttls, strict=True):
            seconds = TTL_SECONDS[ttl]
            entry = self._entries.get((model, keys[index]))
            if entry is not None:
                entry.ttl = max(entry.ttl, seconds)
                entry.expires = max(entry.expires, now + seconds)
            elif ends[index] >= minimum:
                self._entries[(model, keys[index])] = _Entry(seconds, now + seconds)
                if ends[index] > written_to:
                    written[ttl] += ends[index] - written_to
                    written_to = ends[index]
        return CacheUsage(
            cache_read_input_tokens=read,
            ephemeral_5m_input_tokens=written["5m"],
            ephemeral_1h_input_tokens=written["1h"],
            input_tokens=total - read - written["5m"] - written["1h"],
        )

    def _longest_cached(self, model: str, keys: list[str], marked: list[int]) -> int | None:
        """The last block of the longest cached prefix within the lookback of a breakpoint."""
        found = None
        for breakpoint_at in marked:
            for index in range(breakpoint_at, max(breakpoint_at - LOOKBACK_BLOCKS, 0) - 1, -1):
                if (model, keys[index]) in self._entries:
                    found = index if found is None else max(found, index)
                    break
        return found


def prompt_blocks(body: dict) -> list[Block]:
    """The request's blocks in the cache's order: tools, system, then each message's content."""
    blocks = [_block({"tool": _unmarked(tool)}, tool) for tool in body.get("tools") or []]
    system = body.get("system")
    for block in _content(system) if system else []:
        blocks.append(_block({"system": _unmarked(block)}, block))
    for number, message in enumerate(body.get("messages") or []):
        for place, block in enumerate(_content(message.get("content", ""))):
            where = {"message": number, "role": message.get("role"), "block": place}
            blocks.append(_block({**where, "content": _unmarked(block)}, block))
    return blocks


def _content(content: object) -> list[dict]:
    """A string is one text block; a list is its blocks."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [block for block in content if isinstance(block, dict)]
    return []


def _unmarked(block: dict) -> dict:
    return {name: value for name, value in block.items() if name != "cache_control"}


def _block(key: dict, block: dict) -> Block:
    return Block(
        key=json.dumps(key, sort_keys=True, ensure_ascii=False),
        tokens=block_tokens(block),
        cache_control=block.get("cache_control"),
    )


def block_tokens(block: dict) -> int:
    """A text block's text, an image's fixed figure, anything else as its JSON."""
    if block.get("type") == "text" and isinstance(block.get("text"), str):
        return estimate_tokens(block["text"])
    if block.get("type") == "image":
        return IMAGE_TOKENS
    return estimate_tokens(json.dumps(_unmarked(block), sort_keys=True, ensure_ascii=False))


def _ttls_checked(marks: list[dict]) -> list[str]:
    """Each breakpoint's TTL, or ``CacheRuleError`` as the API words its refusal."""
    if len(marks) > MAX_BREAKPOINTS:
        raise CacheRuleError(
            f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. "
            f"Found {len(marks)}."
        )
    ttls = []
    for mark in marks:
        if not isinstance(mark, dict) or mark.get("type") != "ephemeral":
            raise CacheRuleError(f"cache_control: the only type is 'ephemeral', not {mark!r}")
        ttl = mark.get("ttl", "5m")
        if ttl not in TTL_SECONDS:
            raise CacheRuleError(f"cache_control.ttl: expected '5m' or '1h', not {ttl!r}")
        ttls.append(ttl)
    for earlier, later in pairwise(ttls):
        if TTL_SECONDS[later] > TTL_SECONDS[earlier]:
            raise CacheRuleError(
                f"A cache_control block with ttl='{later}' must not come after one with "
                f"ttl='{earlier}': longer TTLs come first (blocks are read in the order tools, "
                "system, messages)."
            )
    return ttls


def _prefix_keys(model: str, blocks: list[Block]) -> list[str]:
    """The key of the prefix ending at each block: a running hash of the model and blocks."""
    digest = hashlib.sha256(model.encode())
    keys = []
    for block in blocks:
        digest.update(b"\0" + block.key.encode())
        keys.append(digest.copy().hexdigest())
    return keys
