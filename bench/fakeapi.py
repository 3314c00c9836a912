"""A local fake of the Messages API, good enough for the real anthropic SDK.

Tests point the SDK at it with ``ANTHROPIC_BASE_URL`` (the ``fake_api`` fixture does that) and
script what it answers, one response per request, in order::

    fake_api.push(FakeError(529), FakeReply("<say>hello</say>", chunks=3))

``POST /v1/messages`` answers with server-sent events when the body has ``"stream": true``
(message_start with usage including the cache fields, content_block_start, one text_delta per
chunk, content_block_stop, message_delta with the stop reason and output tokens, message_stop)
and with a JSON message otherwise. The usage is what the prompt cache's rules give
(``bench/promptcache.py``: ``FakeMessagesAPI(cache=PromptCache(minimums, clock))``, by default
the models' own minimums on the real clock): two identical requests with a breakpoint past the
minimum report a write, then a read, and a request with more than four breakpoints or a 1-hour
one after a 5-minute one is answered 400, as the API answers it. A reply that scripts
``input_tokens`` or a cache field reports those instead (the cache still sees the request).
``.usages`` holds the usage reported for each reply, output tokens included. ``online(api)``
points the project's Claude client at a running fake, with a key, for a block's length.
``POST /v1/messages/count_tokens`` answers an estimate (characters / 4). Requests need an API
key (``x-api-key`` or ``Authorization: Bearer …``).
With nothing scripted, the answer is ``DEFAULT_REPLY``, or what ``responder`` (a function of the
request's JSON body, set by the test) returns: a reply per model or per prompt. Every request
is recorded: ``.requests`` holds the parsed JSON bodies, ``.recorded`` the path and headers
too. ``.first_token_at`` holds, for each streamed reply, the ``time.time()`` at which its first
text delta was written (the browser benchmark of the first visible character measures from
there).
"""

import json
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from django.test import override_settings

from bench.promptcache import CacheRuleError, CacheUsage, PromptCache

DEFAULT_REPLY = "<thought>fake reply</thought><say>Hello from the fake Messages API.</say>"

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


@dataclass(frozen=True)
class FakeReply:
    """A reply: streamed in ``chunks`` pieces, waiting ``delay`` seconds before each.

    With ``fail_after`` set, the stream stops after that many chunks with an SSE ``error``
    event of ``error_type`` (what the API does when it overloads mid-reply), or, when
    ``error_type`` is None, the connection just closes there (a reply cut short).
    """

    text: str = DEFAULT_REPLY
    chunks: int = 4
    delay: float = 0.0
    stop_reason: str = "end_turn"
    # The input usage: with input_tokens and both cache fields None, what the prompt cache's
    # rules give; with any one set, as scripted (input_tokens None: estimated from the request).
    input_tokens: int | None = None
    output_tokens: int | None = None  # None: estimated from the text
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    # Of a scripted cache_creation_input_tokens, those written for an hour (the rest for five
    # minutes), sent as the API's cache_creation split; None: no split is sent.
    ephemeral_1h_input_tokens: int | None = None
    fail_after: int | None = None
    error_type: str | None = "overloaded_error"
    # Searches the web search tool made for this reply, reported in the final usage as the API
    # reports them (``server_tool_use.web_search_requests``).
    web_searches: int = 0


@dataclass(frozen=True)
class FakeError:
    """An error response with an Anthropic-shaped JSON body."""

    status: int
    message: str = ""
    error_type: str | None = None  # None: the usual type for the status
    retry_after: str | float | None = None


@dataclass(frozen=True)
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict = field(default_factory=dict)


class FakeMessagesAPI:
    """The fake server, on 127.0.0.1 and a free port, in a background thread."""

    def __init__(self, *, cache: PromptCache | None = None) -> None:
        self.cache = cache if cache is not None else PromptCache()
        self.usages: list[dict] = []
        self._lock = threading.Lock()
        self._script: deque[FakeReply | FakeError] = deque()
        self._recorded: list[Recorded] = []
        self.first_token_at: list[float] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.responder: Callable[[dict], FakeReply | FakeError] | None = None

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self) -> "FakeMessagesAPI":
        handler = type("Handler", (_Handler,), {"api": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> "FakeMessagesAPI":
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._server is not None, "the fake Messages API is not running"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    # --- scripting and inspection ------------------------------------------------------------

    def push(self, *responses: FakeReply | FakeError) -> None:
        """Queue responses; each request takes the next one."""
        with self._lock:
            self._script.extend(responses)

    @property
    def requests(self) -> list[dict]:
        """The JSON bodies received, oldest first."""
        with self._lock:
            return [recorded.body for recorded in self._recorded]

    @property
    def recorded(self) -> list[Recorded]:
        with self._lock:
            return list(self._recorded)

    def _take(self, recorded: Recorded) -> FakeReply | FakeError:
        with self._lock:
            self._recorded.append(recorded)
            if self._script:
                return self._script.popleft()
            responder = self.responder
        return responder(recorded.body) if responder is not None else FakeReply()

    def _usage_report(self, body: dict, reply: FakeReply) -> dict:
        """The usage of a reply (``CacheRuleError`` for a request the API refuses), recorded."""
        with self._lock:
            cached = self.cache.apply(body)
            usage = _usage(body, reply, cached)
            self.usages.append({**usage, "output_tokens": _output_tokens(reply)})
        return usage


class _Handler(BaseHTTPRequestHandler):
    api: FakeMessagesAPI
    protocol_version = "HTTP/1.0"  # one request per connection; a stream ends when it closes

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._error(FakeError(400, "the body is not JSON"))
            return
        path = self.path.split("?", 1)[0]
        headers = {name.lower(): value for name, value in self.headers.items()}
        if not (headers.get("x-api-key") or headers.get("authorization", "").startswith("Bearer ")):
            self._error(FakeError(401, "no API key"))
            return
        if path == "/v1/messages/count_tokens":
            self._json(200, {"input_tokens": _estimate(body)})
            return
        if path != "/v1/messages":
            self._error(FakeError(404, f"no route for {path}"))
            return
        response = self.api._take(Recorded(path=path, headers=headers, body=body))
        if isinstance(response, FakeError):
            self._error(response)
            return
        try:
            usage = self.api._usage_report(body, response)
        except CacheRuleError as error:
            self._error(FakeError(400, str(error)))
            return
        if body.get("stream"):
            self._stream(body, response, usage)
        else:
            self._message(body, response, usage)

    def do_GET(self) -> None:
        self._error(FakeError(404, f"no route for {self.path}"))

    # --- responses ---------------------------------------------------------------------------

    def _json(self, status: int, payload: dict, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", "req_fake")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, error: FakeError) -> None:
        error_type = error.error_type or ERROR_TYPES.get(error.status, "api_error")
        message = error.message or f"fake {error_type}"
        headers = {} if error.retry_after is None else {"retry-after": str(error.retry_after)}
        payload = {"type": "error", "error": {"type": error_type, "message": message}}
        self._json(error.status, payload, headers)

    def _message(self, body: dict, reply: FakeReply, usage: dict) -> None:
        self._json(
            200,
            {
                **_message_shell(body, reply),
                "content": [{"type": "text", "text": reply.text}],
                "stop_reason": reply.stop_reason,
                "usage": {**usage, **_final_usage(reply)},
            },
        )

    def _stream(self, body: dict, reply: FakeReply, usage: dict) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("request-id", "req_fake")
        self.end_headers()
        try:
            self._event(
                "message_start",
                {
                    "message": {
                        **_message_shell(body, reply),
                        "content": [],
                        "stop_reason": None,
                        "usage": {**usage, "output_tokens": 1},
                    }
                },
            )
            self._event(
                "content_block_start",
                {"index": 0, "content_block": {"type": "text", "text": ""}},
            )
            self._event("ping", {})
            for number, chunk in enumerate(_chunks(reply.text, reply.chunks)):
                if reply.fail_after is not None and number >= reply.fail_after:
                    if reply.error_type is None:
                        return
                    self._event(
                        "error",
                        {
                            "error": {
                                "type": reply.error_type,
                                "message": f"fake {reply.error_type}",
                            }
                        },
                    )
                    return
                if reply.delay:
                    time.sleep(reply.delay)
                self._event(
                    "content_block_delta",
                    {"index": 0, "delta": {"type": "text_delta", "text": chunk}},
                )
                if number == 0:
                    with self.api._lock:
                        self.api.first_token_at.append(time.time())
            self._event("content_block_stop", {"index": 0})
            self._event(
                "message_delta",
                {
                    "delta": {"stop_reason": reply.stop_reason, "stop_sequence": None},
                    "usage": _final_usage(reply),
                },
            )
            self._event("message_stop", {})
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout in a test): nothing to do

    def _event(self, name: str, data: dict) -> None:
        self.wfile.write(f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n".encode())
        self.wfile.flush()


def _message_shell(body: dict, reply: FakeReply) -> dict:
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "claude-fake"),
        "stop_sequence": None,
    }


def _usage(body: dict, reply: FakeReply, cached: CacheUsage) -> dict:
    scripted = (reply.cache_read_input_tokens, reply.cache_creation_input_tokens)
    if reply.input_tokens is None and all(field is None for field in scripted):
        return cached.as_api()
    usage = {
        "input_tokens": _estimate(body) if reply.input_tokens is None else reply.input_tokens,
        "cache_creation_input_tokens": reply.cache_creation_input_tokens or 0,
        "cache_read_input_tokens": reply.cache_read_input_tokens or 0,
    }
    if reply.ephemeral_1h_input_tokens is not None:
        hour = reply.ephemeral_1h_input_tokens
        usage["cache_creation"] = {
            "ephemeral_5m_input_tokens": usage["cache_creation_input_tokens"] - hour,
            "ephemeral_1h_input_tokens": hour,
        }
    return usage


def _final_usage(reply: FakeReply) -> dict:
    """What the API adds to the usage once the reply is written: its output tokens, and the
    server tools' use when a search was made."""
    usage: dict = {"output_tokens": _output_tokens(reply)}
    if reply.web_searches:
        usage["server_tool_use"] = {"web_search_requests": reply.web_searches}
    return usage


def _output_tokens(reply: FakeReply) -> int:
    return max(1, len(reply.text) // 4) if reply.output_tokens is None else reply.output_tokens


def _estimate(body: dict) -> int:
    sent = json.dumps([body.get("system", ""), body.get("messages", [])])
    return max(1, len(sent) // 4)


def _chunks(text: str, count: int) -> list[str]:
    count = max(1, min(count, len(text) or 1))
    size = -(-len(text) // count) or 1
    return [text[start : start + size] for start in range(0, len(text), size)] or [""]


@contextmanager
def online(api: FakeMessagesAPI) -> Iterator[None]:
    """The Claude client pointed at the fake, with a key, for the block's length."""
    saved = {name: os.environ.get(name) for name in ("ANTHROPIC_BASE_URL", "NO_PROXY")}
    os.environ["ANTHROPIC_BASE_URL"] = api.url
    os.environ["NO_PROXY"] = ",".join(filter(None, [saved["NO_PROXY"], "127.0.0.1"]))
    try:
        with override_settings(ANTHROPIC_API_KEY="bench", COMPANION_OFFLINE=False):
            yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
