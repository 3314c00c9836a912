"""The one door to Claude: every call to the Messages API goes through ``complete``.

``complete`` streams a reply, hands the text so far to ``on_text`` as it grows, and returns the
final text with the token usage the API reported. Failures come back as ``ClaudeError``, with a
message written for people and a ``retryable`` flag.

Retries are done here, not in the SDK (the client is built with ``max_retries=0``), so the
policy is in one readable place: on 408, 429, any 5xx (529 is "overloaded"), the same errors
arriving as an ``error`` event in the middle of a stream, connection failures and timeouts,
``complete`` waits and tries again, up to ``settings.CLAUDE_MAX_RETRIES`` more times. The wait
doubles from ``RETRY_BASE_DELAY`` (times a random factor between 0.5 and 1, capped at
``RETRY_MAX_DELAY``); a ``retry-after`` header lengthens it (capped at ``RETRY_AFTER_MAX``).
Any other error (400, 401, 403, 404, 413, …) is raised at once. A retry after text has already
streamed starts the text again: ``on_text("")`` clears it, then the new attempt's text grows.

A call can be silent for a long time without failing: waiting out a ``retry-after`` between
attempts, or while the API sends its opening events and pings before the first text. ``alive``
is called at those moments (each streamed event that carries no text, before each wait between
attempts and every ``ALIVE_INTERVAL`` seconds during it, and once the SDK is imported, before
the first request), so a caller can show it still works on the call: the Heart refreshes its
turn's heartbeat there, and the turn is not taken for one whose worker died. A request on which
the API sends nothing at all is cut off by the timeout.

Without an API key but with a local model server (``settings.LOCAL_SERVER``: Ollama, llama.cpp's
server, vLLM or LM Studio speaking the Messages API at ``SILENTSTAR_LOCAL_BASE_URL``), the calls
go there, the same way, with the model each role names for it (the settings put them in place
of Claude's), a placeholder key, no web search tool (Anthropic's own server tool) and, unless
``settings.LOCAL_CACHE_MARKERS``, no ``cache_control`` markers; its replies are ``local`` (the
ledger prices them at nothing) and its errors name the local server, not Claude.

With ``settings.COMPANION_OFFLINE`` (neither an API key nor a local server) nothing touches the
network: the caller's ``offline_answer`` answers (the offline companion for the Heart, the
offline Mirror for the Mirror), streamed through ``on_text`` the same way. The client imports
no app: each caller hands it the answer to give.

Every call names its ``component`` (what it is for: ``heart``, ``mirror-clean``, …). After each
finished call, online or offline, ``model_called`` is sent with the component, the ``Reply`` and
the moment it finished; the ledger app records it (``ledger/``, docs/costs.md). A receiver that
fails is logged, never raised: the reply is paid for and is the caller's all the same.

The SDK is imported inside the functions that use it: the import takes over a second, and
Django start-up should not pay it. A process keeps one client (``_client``), so its connections
stay open from call to call and its TLS set-up (about 40 ms) is paid once; it is built again
when the key, the timeout, ``ANTHROPIC_BASE_URL`` (which can point the whole project at another
endpoint, such as the fake Messages API the tests run) or the local server's address, or the
process (a forked worker) change.
"""

import base64
import functools
import logging
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.dispatch import Signal
from django.utils import timezone

from silentstar.tokens import estimate_tokens

logger = logging.getLogger(__name__)

IMAGE_MAX_BYTES = 3_932_160  # raw bytes: the API's 5 MB limit on the base64 text
IMAGE_MEDIA_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")

RETRY_BASE_DELAY = 1.0  # seconds before the first retry; doubles each time
RETRY_MAX_DELAY = 30.0  # the longest backoff between two attempts
RETRY_AFTER_MAX = 60.0  # the longest the API's retry-after is honoured
OFFLINE_CHUNKS = 4  # pieces the offline reply is streamed in
ALIVE_INTERVAL = 1.0  # seconds between calls of ``alive`` during a wait between attempts
WEB_SEARCH_TOOL = "web_search_20250305"  # the server tool's version every current model takes

# The time.sleep used between attempts; tests replace it to record the waits.
sleep: Callable[[float], None] = time.sleep

_RETRYABLE_STATUSES = frozenset({408, 429})  # and every 5xx
_STATUS_OF_ERROR_TYPE = {  # for errors that arrive as an SSE event, inside a 200 response
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
# ``{api}`` and ``{who}``: "Claude's API" and "Claude", or the local model server for both.
_WHAT_WENT_WRONG = {
    400: "{api} rejected the request",
    401: "{api} did not accept the API key",
    402: "{api} refused the request for billing reasons",
    403: "{api} refused permission",
    404: "{api} did not find what was asked for (is the model name right?)",
    408: "{api} timed out the request",
    413: "The request is too large for {api}",
    429: "{who}'s rate limit was reached",
    500: "{api} had an internal error",
    529: "{who} is overloaded",
}
CLAUDE_NAMES = {"api": "Claude's API", "who": "Claude"}
LOCAL_NAMES = {"api": "the local model server", "who": "the local model server"}
CACHE_MARKER = "cache_control"  # a prompt-cache breakpoint, on a block of the request


# Sent after every finished call with ``component`` (str), ``reply`` (Reply) and ``at`` (the
# aware datetime it finished).
model_called = Signal()


@dataclass(frozen=True)
class Usage:
    """Tokens as the API counts them: ``input_tokens`` were neither read from the cache nor
    written to it; the cache writes are split by how long the entry lives."""

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_5m_tokens: int
    cache_write_1h_tokens: int
    web_searches: int = 0  # searches the web search tool made, paid for apart from tokens

    @property
    def cache_write_tokens(self) -> int:
        """Every token written to the cache, whatever its lifetime."""
        return self.cache_write_5m_tokens + self.cache_write_1h_tokens


@dataclass(frozen=True)
class Reply:
    text: str
    usage: Usage
    model: str
    stop_reason: str | None
    offline: bool
    local: bool = False  # answered by a local model server, at no price


class ClaudeError(Exception):
    """A call to Claude failed; ``str(error)`` says why, for people.

    ``retryable`` is true when trying again later may work (overload, rate limit, outage,
    network); ``status`` is the HTTP status when the API answered; ``attempts`` counts the
    requests made.
    """

    def __init__(
        self, message: str, *, retryable: bool, status: int | None = None, attempts: int = 1
    ):
        super().__init__(message)
        self.retryable = retryable
        self.status = status
        self.attempts = attempts


def complete(
    *,
    component: str,
    system: list[dict],
    messages: list[dict],
    offline_answer: Callable[[], str],
    model: str | None = None,
    max_tokens: int | None = None,
    on_text: Callable[[str], None] | None = None,
    alive: Callable[[], None] | None = None,
    on_retry: Callable[[str], None] | None = None,
    tools: list[dict] | None = None,
) -> Reply:
    """Stream Claude's reply to ``messages``, retrying what is worth retrying.

    ``component`` names what the call is for, in the ledger. ``system`` is a list of text blocks
    (``cache_control`` passes through untouched), ``messages`` the Messages API list, ``tools``
    the API's tools (the agents pass `web_search_tools`: server tools the API runs itself, so
    the reply is still one message whose text blocks are the answer).
    ``offline_answer`` gives the reply when the companion is offline. ``on_text`` receives the
    whole text so far each time it grows; ``alive`` is called while the call goes on without new
    text (see the module's docstring); ``on_retry`` is told, in words, what failed and when the
    next try is, before each wait between attempts. Raises ``ClaudeError``.
    """
    if settings.COMPANION_OFFLINE:
        reply = _complete_offline(
            text=offline_answer(), system=system, messages=messages, on_text=on_text
        )
        return _announced(component, reply)
    local = settings.LOCAL_SERVER
    if not settings.ANTHROPIC_API_KEY and not local:
        raise ClaudeError(
            "No Anthropic API key is set (ANTHROPIC_API_KEY), so Claude cannot be called",
            retryable=False,
        )

    client = _client(
        pid=os.getpid(),
        api_key=settings.LOCAL_API_KEY if local else settings.ANTHROPIC_API_KEY,
        base_url=settings.LOCAL_BASE_URL if local else os.environ.get("ANTHROPIC_BASE_URL"),
        timeout=settings.CLAUDE_TIMEOUT_SECONDS,
    )
    if alive is not None:  # the SDK's first import can outlast what silence recovery allows
        alive()
    request = {
        "model": model or settings.HEART_MODEL,
        "max_tokens": max_tokens or settings.HEART_MAX_TOKENS,
        "messages": messages,
    }
    if system:
        request["system"] = system
    if tools:
        request["tools"] = tools
    if local and not settings.LOCAL_CACHE_MARKERS:
        request = without_cache_markers(request)
    names = LOCAL_NAMES if local else CLAUDE_NAMES
    attempts = settings.CLAUDE_MAX_RETRIES + 1
    shown = [""]  # the text on_text was last given

    def grow(text: str) -> None:
        shown[0] = text
        if on_text is not None:
            on_text(text)

    for attempt in range(1, attempts + 1):
        try:
            reply = _stream_once(client, request, grow, alive, local=local)
        except Exception as exc:
            error = _as_claude_error(exc, attempts=attempt, names=names)
            if error is None:
                raise
            if not error.retryable or attempt == attempts:
                raise error from exc
            delay = retry_delay(retry=attempt, retry_after=_retry_after(exc))
            logger.warning(
                "%s call failed (%s); retry %d of %d in %.1f s",
                "Local model" if local else "Claude",
                error,
                attempt,
                attempts - 1,
                delay,
            )
            if shown[0]:
                grow("")  # the next attempt starts the text again
            if on_retry is not None:
                when = f"in {delay:.0f} s" if delay >= 1 else "now"
                on_retry(f"{error}. Trying again {when} (retry {attempt} of {attempts - 1}).")
            _wait(delay, alive)
        else:
            return _announced(component, reply)
    raise AssertionError("unreachable")  # pragma: no cover


@functools.lru_cache(maxsize=1)
def _client(*, pid: int, api_key: str, base_url: str | None, timeout: float):
    """The process's client for these settings (``pid``: a forked process builds its own, never
    sharing its parent's connections). Thread-safe, as the SDK's clients are."""
    import anthropic

    return anthropic.Anthropic(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0)


def web_search_tools() -> list[dict]:
    """The API's web search tool, when ``settings.WEB_SEARCH`` allows it (``[]`` otherwise, and
    with a local model server, which has no such tool), used at most
    ``settings.WEB_SEARCH_MAX_USES`` times a call: for the agents that look things up (the
    Compass and the Loom's Researcher), never for the Heart."""
    if not settings.WEB_SEARCH or settings.LOCAL_SERVER:
        return []
    return [
        {"type": WEB_SEARCH_TOOL, "name": "web_search", "max_uses": settings.WEB_SEARCH_MAX_USES}
    ]


def image_block(*, data: bytes, media_type: str) -> dict:
    """A base64 image content block for a user message; ValueError if Claude would refuse it."""
    media_type = (media_type or "").strip().lower()
    if media_type not in IMAGE_MEDIA_TYPES:
        given = repr(media_type) if media_type else "an image of unknown type"
        raise ValueError(f"Claude accepts JPEG, PNG, GIF or WebP images, not {given}")
    if not data:
        raise ValueError("The image is empty")
    if len(data) > IMAGE_MAX_BYTES:
        raise ValueError(
            f"The image is {len(data) / 2**20:.1f} MB; Claude accepts at most "
            f"{IMAGE_MAX_BYTES / 2**20:.2f} MB ({IMAGE_MAX_BYTES:,} bytes) per image"
        )
    return {
        "type": "image",
        "source": {
            "type": "base64",
            "media_type": media_type,
            "data": base64.b64encode(data).decode("ascii"),
        },
    }


def without_cache_markers(request: dict) -> dict:
    """``request`` without its prompt-cache markers (``cache_control`` in the system blocks, the
    messages' content blocks and the tools), for a server that does not take them."""

    def plain(value):
        if isinstance(value, dict):
            return {key: plain(item) for key, item in value.items() if key != CACHE_MARKER}
        if isinstance(value, list):
            return [plain(item) for item in value]
        return value

    return plain(request)


def retry_delay(*, retry: int, retry_after: float | None = None) -> float:
    """Seconds to wait before retry number ``retry`` (1, 2, …): backoff with jitter, or longer."""
    backoff = min(RETRY_MAX_DELAY, RETRY_BASE_DELAY * 2 ** (retry - 1))
    backoff *= random.uniform(0.5, 1.0)
    if retry_after is not None:
        return max(backoff, min(retry_after, RETRY_AFTER_MAX))
    return backoff


# --- internals ---------------------------------------------------------------------------------


def _announced(component: str, reply: Reply) -> Reply:
    """Send ``model_called`` for a finished call. ``send_robust``: a receiver that fails is
    logged (by Django's ``django.dispatch`` logger), never raised."""
    model_called.send_robust(sender=Reply, component=component, reply=reply, at=timezone.now())
    return reply


def _wait(delay: float, alive: Callable[[], None] | None) -> None:
    """``sleep(delay)``; with ``alive``, in pieces of ``ALIVE_INTERVAL``, calling it before,
    between and after them."""
    if alive is None:
        sleep(delay)
        return
    remaining = delay
    alive()
    while remaining > 0:
        piece = min(ALIVE_INTERVAL, remaining)
        sleep(piece)
        remaining -= piece
        alive()


def _stream_once(
    client,
    request: dict,
    grow: Callable[[str], None],
    alive: Callable[[], None] | None,
    *,
    local: bool,
) -> Reply:
    text = ""
    with client.messages.stream(**request) as stream:
        for event in stream:
            if event.type == "content_block_delta" and event.delta.type == "text_delta":
                text += event.delta.text
                grow(text)
            elif alive is not None:
                alive()
        message = stream.get_final_message()
    if message.stop_reason is None:  # the API always sends one: the stream was cut short
        raise _CutShort
    usage = message.usage
    written = usage.cache_creation_input_tokens or 0
    # The split by lifetime; without one (an older API, another endpoint) every token written
    # counts as a 5-minute write, the default lifetime.
    hour = getattr(usage.cache_creation, "ephemeral_1h_input_tokens", 0) or 0
    hour = min(hour, written)
    searches = getattr(usage.server_tool_use, "web_search_requests", 0) or 0
    return Reply(
        text="".join(block.text for block in message.content if block.type == "text"),
        usage=Usage(
            input_tokens=usage.input_tokens or 0,
            output_tokens=usage.output_tokens or 0,
            cache_read_tokens=usage.cache_read_input_tokens or 0,
            cache_write_5m_tokens=written - hour,
            cache_write_1h_tokens=hour,
            web_searches=searches,
        ),
        model=message.model,
        stop_reason=message.stop_reason,
        offline=False,
        local=local,
    )


class _CutShort(Exception):
    """The stream ended without the message's end."""


def _as_claude_error(
    exc: Exception, *, attempts: int, names: dict[str, str] = CLAUDE_NAMES
) -> ClaudeError | None:
    """The ClaudeError for a failure of the SDK or the network, or None for anything else;
    ``names`` say whose (``CLAUDE_NAMES`` or ``LOCAL_NAMES``)."""
    import anthropic
    import httpx2

    def said(text: str) -> str:
        text = text.format(**names)
        return text[0].upper() + text[1:]

    tried = f" — tried {attempts} time{'s' if attempts != 1 else ''}"
    if isinstance(exc, _CutShort):
        return ClaudeError(
            said("{who}'s reply stopped before it was finished") + tried,
            retryable=True,
            attempts=attempts,
        )
    if isinstance(exc, anthropic.APITimeoutError | httpx2.TimeoutException):
        return ClaudeError(
            said("{api} timed out")
            + f" (nothing for {settings.CLAUDE_TIMEOUT_SECONDS:g} s){tried}",
            retryable=True,
            attempts=attempts,
        )
    if isinstance(exc, anthropic.APIConnectionError | httpx2.TransportError):
        cause = (exc.__cause__ or exc.__context__) if isinstance(exc, anthropic.APIError) else exc
        detail = f" ({cause})" if cause and str(cause) else ""
        return ClaudeError(
            said("Could not reach {api}") + detail + tried, retryable=True, attempts=attempts
        )
    if isinstance(exc, anthropic.APIStatusError):
        status = exc.status_code
        if status < 400:  # an error event inside a streamed 200 response
            status = _STATUS_OF_ERROR_TYPE.get(exc.type or "", 500 if exc.type else 400)
        retryable = status in _RETRYABLE_STATUSES or status >= 500
        what = said(
            _WHAT_WENT_WRONG.get(status)
            or ("{api} failed" if status >= 500 else "{api} refused the request")
        )
        code = f"{status} {exc.type}" if exc.type else str(status)
        reason = exc.api_message or ""
        if exc.status_code < 400:
            code += ", mid-stream"
        message = f"{what} ({code})"
        if retryable:
            message += tried
        if reason:
            message += f": {reason}"
        return ClaudeError(message, retryable=retryable, status=status, attempts=attempts)
    if isinstance(exc, anthropic.APIError):
        return ClaudeError(said("{api} failed") + f": {exc}", retryable=False, attempts=attempts)
    return None


def _retry_after(exc: Exception) -> float | None:
    """The API's ``retry-after`` (or ``retry-after-ms``) in seconds, if it sent one."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) * scale
        except ValueError:
            continue  # an HTTP date: rare from this API; the backoff covers it
        if seconds >= 0:
            return seconds
    return None


def _complete_offline(
    *, text: str, system: list[dict], messages: list[dict], on_text: Callable[[str], None] | None
) -> Reply:
    if on_text is not None:
        step = max(1, -(-len(text) // OFFLINE_CHUNKS))
        for end in range(step, len(text) + step, step):
            on_text(text[: min(end, len(text))])
    sent = "".join(_texts(system)) + "".join(
        "".join(_texts(m.get("content"))) for m in messages if isinstance(m, dict)
    )
    return Reply(
        text=text,
        usage=Usage(
            input_tokens=estimate_tokens(sent),
            output_tokens=estimate_tokens(text),
            cache_read_tokens=0,
            cache_write_5m_tokens=0,
            cache_write_1h_tokens=0,
        ),
        model="offline",
        stop_reason="end_turn",
        offline=True,
    )


def _texts(content: object) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [str(block.get("text", "")) for block in content if isinstance(block, dict)]
    return []
