"""The Claude client, through the real SDK against the local fake Messages API.

Every finished call is written to the ledger (``ledger``), in the events store.
"""

import base64
import math
import os
import socket
import subprocess
import sys
from functools import partial

import pytest
from django.utils import timezone

from bench.fakeapi import DEFAULT_REPLY, FakeError, FakeMessagesAPI, FakeReply
from events.parse import parse
from heart import offline
from silentstar import claude
from silentstar.claude import ClaudeError, Reply, Usage, complete, image_block, model_called
from tests.conftest import REPO

pytestmark = pytest.mark.django_db(databases="__all__")

SYSTEM = [{"type": "text", "text": "You are the companion."}]
MESSAGES = [{"role": "user", "content": "<luna><say>hello</say></luna>"}]


def never_offline() -> str:
    raise AssertionError("the offline answer was asked for while online")


@pytest.fixture
def announced():
    """What each sending of ``model_called`` carried, in order."""
    heard: list[dict] = []

    def hear(sender, **kwargs):
        heard.append(kwargs)

    model_called.connect(hear)
    yield heard
    model_called.disconnect(hear)


@pytest.fixture
def waits(monkeypatch):
    """The seconds complete() slept between attempts (without sleeping)."""
    recorded: list[float] = []
    monkeypatch.setattr(claude, "sleep", recorded.append)
    return recorded


def test_it_streams_text_in_growing_pieces(fake_api):
    text = "<say>The lake is still tonight, and the reeds are quiet.</say>"
    fake_api.push(FakeReply(text, chunks=5, delay=0.005))
    pieces: list[str] = []

    reply = complete(
        component="heart",
        offline_answer=never_offline,
        system=SYSTEM,
        messages=MESSAGES,
        on_text=pieces.append,
    )

    assert reply.text == text
    assert len(pieces) == 5
    assert all(text.startswith(piece) for piece in pieces)
    assert [len(piece) for piece in pieces] == sorted({len(piece) for piece in pieces})
    assert pieces[-1] == text
    assert reply.offline is False
    assert reply.stop_reason == "end_turn"
    assert fake_api.requests[0]["stream"] is True


def test_it_works_without_on_text(fake_api):
    assert (
        complete(
            component="heart", offline_answer=never_offline, system=SYSTEM, messages=MESSAGES
        ).text
        == DEFAULT_REPLY
    )


def test_it_maps_the_usage_including_the_cache(fake_api):
    fake_api.push(
        FakeReply(
            "<say>hi</say>",
            input_tokens=120,
            output_tokens=7,
            cache_read_input_tokens=900,
            cache_creation_input_tokens=300,
        )
    )

    reply = complete(
        component="heart", offline_answer=never_offline, system=SYSTEM, messages=MESSAGES
    )

    assert reply.usage == Usage(
        input_tokens=120,
        output_tokens=7,
        cache_read_tokens=900,
        cache_write_5m_tokens=300,
        cache_write_1h_tokens=0,
    )
    assert reply.usage.cache_write_tokens == 300


def test_it_splits_the_cache_writes_by_lifetime_as_the_api_reports_them(fake_api):
    fake_api.push(
        FakeReply(
            "<say>hi</say>",
            input_tokens=50,
            cache_read_input_tokens=0,
            cache_creation_input_tokens=1000,
            ephemeral_1h_input_tokens=600,
        )
    )

    reply = complete(
        component="heart", offline_answer=never_offline, system=SYSTEM, messages=MESSAGES
    )

    assert (reply.usage.cache_write_5m_tokens, reply.usage.cache_write_1h_tokens) == (400, 600)
    assert reply.usage.cache_write_tokens == 1000


def test_it_reads_an_hour_long_write_and_its_read_from_the_prompt_caches_rules(fake_api):
    """The fake's cache (bench/promptcache.py), unscripted: a long system prompt marked for an
    hour is written once, then read."""
    system = [
        {
            "type": "text",
            "text": "The companion remembers. " * 200,
            "cache_control": {"type": "ephemeral", "ttl": "1h"},
        }
    ]

    def call():
        return complete(
            component="heart", offline_answer=never_offline, system=system, messages=MESSAGES
        ).usage

    first, second = call(), call()

    assert first.cache_write_1h_tokens > 0 and first.cache_write_5m_tokens == 0
    assert first.cache_read_tokens == 0
    assert second.cache_read_tokens == first.cache_write_1h_tokens
    assert second.cache_write_tokens == 0


def test_it_announces_each_finished_call_once_with_its_component_reply_and_moment(
    fake_api, announced, waits
):
    fake_api.push(FakeError(529), FakeReply("<say>there you are</say>"))
    before = timezone.now()

    reply = complete(
        component="mirror-clean", offline_answer=never_offline, system=SYSTEM, messages=MESSAGES
    )

    assert len(fake_api.requests) == 2
    [heard] = announced
    assert heard["component"] == "mirror-clean" and heard["reply"] is reply
    assert before <= heard["at"] <= timezone.now()


def test_it_announces_an_offline_call(settings, announced):
    settings.COMPANION_OFFLINE = True

    reply = complete(
        component="heart", offline_answer=lambda: "<say>offline</say>", system=SYSTEM, messages=[]
    )

    assert [(heard["component"], heard["reply"]) for heard in announced] == [("heart", reply)]
    assert reply.offline is True


def test_it_announces_no_call_that_failed(fake_api, announced):
    fake_api.push(FakeError(400, "bad request"))

    with pytest.raises(ClaudeError):
        complete(component="heart", offline_answer=never_offline, system=SYSTEM, messages=MESSAGES)

    assert announced == []


def test_a_receiver_that_fails_is_logged_and_the_reply_is_still_returned(fake_api, caplog):
    def broken(sender, **kwargs):
        raise RuntimeError("the ledger is on fire")

    model_called.connect(broken)
    try:
        reply = complete(
            component="heart", offline_answer=never_offline, system=SYSTEM, messages=MESSAGES
        )
    finally:
        model_called.disconnect(broken)

    assert reply.text == DEFAULT_REPLY
    [logged] = [record for record in caplog.records if record.levelname == "ERROR"]
    assert "broken" in logged.getMessage() and "the ledger is on fire" in logged.getMessage()
    assert isinstance(logged.exc_info[1], RuntimeError)


def test_it_takes_model_and_max_tokens_from_settings(fake_api, settings):
    settings.HEART_MODEL = "claude-sonnet-5-5"
    settings.HEART_MAX_TOKENS = 321

    reply = complete(
        component="heart", offline_answer=never_offline, system=SYSTEM, messages=MESSAGES
    )

    sent = fake_api.requests[0]
    assert (sent["model"], sent["max_tokens"]) == ("claude-sonnet-5-5", 321)
    assert reply.model == "claude-sonnet-5-5"


def test_it_lets_the_caller_override_model_and_max_tokens(fake_api):
    complete(
        component="heart",
        offline_answer=never_offline,
        system=SYSTEM,
        messages=MESSAGES,
        model="claude-haiku-5-5",
        max_tokens=50,
    )

    sent = fake_api.requests[0]
    assert (sent["model"], sent["max_tokens"]) == ("claude-haiku-5-5", 50)


def test_it_offers_the_web_search_tool_only_when_the_setting_allows_it(fake_api, settings):
    settings.WEB_SEARCH = False
    complete(
        component="compass-consult",
        offline_answer=never_offline,
        system=SYSTEM,
        messages=MESSAGES,
        tools=claude.web_search_tools(),
    )
    settings.WEB_SEARCH, settings.WEB_SEARCH_MAX_USES = True, 3
    complete(
        component="compass-consult",
        offline_answer=never_offline,
        system=SYSTEM,
        messages=MESSAGES,
        tools=claude.web_search_tools(),
    )

    assert "tools" not in fake_api.requests[0]
    assert fake_api.requests[1]["tools"] == [
        {"type": claude.WEB_SEARCH_TOOL, "name": "web_search", "max_uses": 3}
    ]


def test_it_counts_the_web_searches_the_api_reports(fake_api):
    fake_api.push(FakeReply("Found it.", web_searches=2), FakeReply("Nothing looked up."))
    searched = complete(
        component="loom-researcher", offline_answer=never_offline, system=SYSTEM, messages=MESSAGES
    )
    plain = complete(
        component="loom-researcher", offline_answer=never_offline, system=SYSTEM, messages=MESSAGES
    )

    assert (searched.usage.web_searches, plain.usage.web_searches) == (2, 0)


def test_it_passes_system_blocks_and_messages_through_untouched(fake_api):
    system = [
        {"type": "text", "text": "Wake text.", "cache_control": {"type": "ephemeral", "ttl": "1h"}},
        {"type": "text", "text": "Ambient prose.", "cache_control": {"type": "ephemeral"}},
    ]
    messages = [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "<say>second</say>"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "## Recent", "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": "## Message\nthird"},
            ],
        },
    ]

    complete(component="heart", offline_answer=never_offline, system=system, messages=messages)

    assert fake_api.requests[0]["system"] == system
    assert fake_api.requests[0]["messages"] == messages


def test_it_sends_the_key_and_honours_the_base_url(fake_api):
    complete(component="heart", offline_answer=never_offline, system=SYSTEM, messages=MESSAGES)

    headers = fake_api.recorded[0].headers
    assert "test-key" in (headers.get("x-api-key", "") + headers.get("authorization", ""))


def test_it_builds_an_image_block_that_round_trips(fake_api):
    data = bytes(range(256)) * 4
    block = image_block(data=data, media_type="image/png")

    complete(
        component="heart",
        offline_answer=never_offline,
        system=SYSTEM,
        messages=[{"role": "user", "content": [block, {"type": "text", "text": "look"}]}],
    )

    sent = fake_api.requests[0]["messages"][0]["content"][0]
    assert sent["type"] == "image"
    assert sent["source"]["type"] == "base64"
    assert sent["source"]["media_type"] == "image/png"
    assert base64.b64decode(sent["source"]["data"]) == data


def test_it_refuses_a_too_large_image_clearly():
    image_block(data=b"x" * claude.IMAGE_MAX_BYTES, media_type="image/jpeg")  # just fits

    with pytest.raises(ValueError, match=r"at most 3\.75 MB \(3,932,160 bytes\)"):
        image_block(data=b"x" * (claude.IMAGE_MAX_BYTES + 1), media_type="image/jpeg")


@pytest.mark.parametrize("media_type", ["image/bmp", "image/svg+xml", "text/plain", ""])
def test_it_refuses_a_media_type_claude_cannot_read(media_type):
    with pytest.raises(ValueError, match="JPEG, PNG, GIF or WebP"):
        image_block(data=b"GIF89a", media_type=media_type)


def test_it_refuses_an_empty_image():
    with pytest.raises(ValueError, match="empty"):
        image_block(data=b"", media_type="image/gif")


@pytest.mark.parametrize("status", [429, 500, 502, 529])
def test_it_retries_overload_rate_limits_and_outages_then_succeeds(fake_api, waits, status):
    fake_api.push(FakeError(status), FakeError(status), FakeReply("<say>made it</say>"))

    reply = complete(
        component="heart", offline_answer=never_offline, system=SYSTEM, messages=MESSAGES
    )

    assert reply.text == "<say>made it</say>"
    assert len(fake_api.requests) == 3
    assert len(waits) == 2


def test_it_says_what_failed_and_when_it_tries_again_before_each_wait(fake_api, waits):
    fake_api.push(FakeError(529), FakeError(529), FakeReply("<say>made it</say>"))
    said = []

    complete(
        component="heart",
        offline_answer=never_offline,
        system=SYSTEM,
        messages=MESSAGES,
        on_retry=said.append,
    )

    assert len(said) == 2 == len(waits)
    assert said[0].startswith("Claude is overloaded (529 overloaded_error) — tried 1 time")
    assert said[0].endswith(". Trying again now (retry 1 of 4).")
    assert said[1].endswith("(retry 2 of 4).")


def test_it_backs_off_exponentially_with_jitter(monkeypatch):
    monkeypatch.setattr(claude, "RETRY_BASE_DELAY", 1.0)
    for retry, ceiling in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0)]:
        delays = {claude.retry_delay(retry=retry) for _ in range(20)}
        assert all(ceiling / 2 <= delay <= ceiling for delay in delays)
        assert len(delays) > 1
    assert claude.retry_delay(retry=20) <= claude.RETRY_MAX_DELAY


def test_it_honours_retry_after(fake_api, waits):
    fake_api.push(FakeError(429, retry_after=7), FakeError(529, retry_after=9999), FakeReply())

    complete(component="heart", offline_answer=never_offline, system=SYSTEM, messages=MESSAGES)

    assert waits[0] == 7
    assert waits[1] == claude.RETRY_AFTER_MAX
    assert len(fake_api.requests) == 3


def test_it_says_it_is_alive_before_during_and_after_a_wait_between_attempts(fake_api, monkeypatch):
    """A long retry-after is waited out in pieces, with ``alive`` called around each, so the
    caller can show it still works on the call."""
    happened: list = []
    monkeypatch.setattr(claude, "sleep", happened.append)
    fake_api.push(FakeError(529, retry_after=2.5), FakeReply())

    complete(
        component="heart",
        offline_answer=never_offline,
        system=SYSTEM,
        messages=MESSAGES,
        alive=lambda: happened.append("alive"),
    )

    wait = happened[happened.index(1.0) - 1 : happened.index(0.5) + 2]
    assert wait == ["alive", 1.0, "alive", 1.0, "alive", 0.5, "alive"]


def test_it_says_it_is_alive_before_the_first_request(fake_api):
    """Between a worker's claim and the first answer lie the context and the SDK's import,
    which a loaded machine can make longer than the silence recovery allows."""
    happened: list[str] = []
    fake_api.responder = lambda body: happened.append("request") or FakeReply()

    complete(
        component="heart",
        offline_answer=never_offline,
        system=SYSTEM,
        messages=MESSAGES,
        alive=lambda: happened.append("alive"),
    )

    assert happened[:2] == ["alive", "request"]


def test_it_says_it_is_alive_on_streamed_events_before_the_first_text(fake_api):
    happened: list[str] = []
    fake_api.push(FakeReply("<say>hi</say>", chunks=1))

    complete(
        component="heart",
        offline_answer=never_offline,
        system=SYSTEM,
        messages=MESSAGES,
        on_text=lambda text: happened.append("text"),
        alive=lambda: happened.append("alive"),
    )

    assert "text" in happened
    assert happened.index("alive") < happened.index("text")


def test_it_gives_up_after_the_retries_with_a_readable_error(fake_api, settings, waits):
    settings.CLAUDE_MAX_RETRIES = 4
    fake_api.push(*[FakeError(529, "Overloaded")] * 6)

    with pytest.raises(ClaudeError) as caught:
        complete(component="heart", offline_answer=never_offline, system=SYSTEM, messages=MESSAGES)

    assert str(caught.value) == (
        "Claude is overloaded (529 overloaded_error) — tried 5 times: Overloaded"
    )
    assert caught.value.retryable is True
    assert caught.value.status == 529
    assert caught.value.attempts == 5
    assert len(fake_api.requests) == 5
    assert len(waits) == 4


def test_it_makes_one_attempt_when_retries_are_off(fake_api, settings, waits):
    settings.CLAUDE_MAX_RETRIES = 0
    fake_api.push(FakeError(500, "boom"))

    with pytest.raises(ClaudeError, match=r"\(500 api_error\) — tried 1 time: boom"):
        complete(component="heart", offline_answer=never_offline, system=SYSTEM, messages=MESSAGES)

    assert waits == []


@pytest.mark.parametrize(
    ("status", "message", "expected"),
    [
        (
            400,
            "messages: roles must alternate",
            "Claude's API rejected the request (400 invalid_request_error): "
            "messages: roles must alternate",
        ),
        (
            401,
            "invalid x-api-key",
            "Claude's API did not accept the API key (401 authentication_error): invalid x-api-key",
        ),
        (403, "not allowed", "Claude's API refused permission (403 permission_error): not allowed"),
        (404, "model: claude-nope", "(404 not_found_error): model: claude-nope"),
    ],
)
def test_it_does_not_retry_a_bad_request(fake_api, waits, status, message, expected):
    fake_api.push(FakeError(status, message))

    with pytest.raises(ClaudeError) as caught:
        complete(component="heart", offline_answer=never_offline, system=SYSTEM, messages=MESSAGES)

    assert expected in str(caught.value)
    assert caught.value.retryable is False
    assert caught.value.status == status
    assert len(fake_api.requests) == 1
    assert waits == []


def test_it_restarts_the_text_when_a_stream_breaks_and_is_retried(fake_api, waits):
    fake_api.push(
        FakeReply("<say>first try, cut off</say>", chunks=4, fail_after=2),
        FakeReply("<say>second try</say>", chunks=2),
    )
    pieces: list[str] = []

    reply = complete(
        component="heart",
        offline_answer=never_offline,
        system=SYSTEM,
        messages=MESSAGES,
        on_text=pieces.append,
    )

    assert reply.text == "<say>second try</say>"
    cut = pieces.index("")
    assert cut == 2
    assert all("<say>first try, cut off</say>".startswith(piece) for piece in pieces[:cut])
    assert pieces[cut + 1 :] == ["<say>second", "<say>second try</say>"]
    assert len(waits) == 1


def test_it_reports_an_error_event_mid_stream_readably(fake_api, settings, waits):
    settings.CLAUDE_MAX_RETRIES = 1
    fake_api.push(*[FakeReply("<say>never finished</say>", fail_after=1)] * 2)

    with pytest.raises(ClaudeError) as caught:
        complete(component="heart", offline_answer=never_offline, system=SYSTEM, messages=MESSAGES)

    assert "Claude is overloaded (529 overloaded_error, mid-stream) — tried 2 times" in str(
        caught.value
    )
    assert caught.value.retryable is True


def test_it_retries_a_reply_cut_short(fake_api, settings, waits):
    settings.CLAUDE_MAX_RETRIES = 1
    fake_api.push(*[FakeReply("<say>half a thought</say>", fail_after=2, error_type=None)] * 2)

    with pytest.raises(ClaudeError, match="stopped before it was finished — tried 2 times"):
        complete(component="heart", offline_answer=never_offline, system=SYSTEM, messages=MESSAGES)

    assert len(fake_api.requests) == 2


def test_it_retries_a_timeout(fake_api, settings, waits, caplog):
    # Seconds between the slow reply's chunks, against a timeout of half a second: room enough
    # for the quick reply on a machine busy with other tests.
    settings.CLAUDE_TIMEOUT_SECONDS = 0.5
    fake_api.push(FakeReply("<say>slow</say>", chunks=2, delay=1.5), FakeReply("<say>quick</say>"))

    reply = complete(
        component="heart", offline_answer=never_offline, system=SYSTEM, messages=MESSAGES
    )

    assert reply.text == "<say>quick</say>"
    assert len(fake_api.requests) == 2
    assert "timed out" in caplog.text


def test_it_gives_up_on_a_closed_port(fake_api, settings, monkeypatch, waits):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{port}")
    settings.CLAUDE_MAX_RETRIES = 2

    with pytest.raises(ClaudeError) as caught:
        complete(component="heart", offline_answer=never_offline, system=SYSTEM, messages=MESSAGES)

    assert str(caught.value).startswith("Could not reach Claude's API")
    assert "tried 3 times" in str(caught.value)
    assert caught.value.retryable is True
    assert len(waits) == 2
    assert fake_api.requests == []


def test_it_refuses_to_call_without_a_key(fake_api, settings):
    settings.ANTHROPIC_API_KEY = ""

    with pytest.raises(ClaudeError, match="No Anthropic API key") as caught:
        complete(component="heart", offline_answer=never_offline, system=SYSTEM, messages=MESSAGES)

    assert caught.value.retryable is False
    assert fake_api.requests == []


def test_it_keeps_one_client_until_the_endpoint_changes(fake_api, monkeypatch):
    import anthropic

    built: list[str | None] = []
    build = anthropic.Anthropic.__init__

    def counted(self, **options):
        built.append(options["base_url"])
        build(self, **options)

    monkeypatch.setattr(anthropic.Anthropic, "__init__", counted)
    claude._client.cache_clear()
    for _ in range(3):
        complete(component="heart", offline_answer=never_offline, system=SYSTEM, messages=MESSAGES)
    assert built == [fake_api.url]

    with FakeMessagesAPI() as elsewhere:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", elsewhere.url)
        complete(component="heart", offline_answer=never_offline, system=SYSTEM, messages=MESSAGES)

        assert built == [fake_api.url, elsewhere.url]
        assert (len(fake_api.requests), len(elsewhere.requests)) == (3, 1)


def test_it_lets_an_error_in_on_text_through_unretried(fake_api, waits):
    def broken(text: str) -> None:
        raise RuntimeError("the page store is down")

    with pytest.raises(RuntimeError, match="page store"):
        complete(
            component="heart",
            offline_answer=never_offline,
            system=SYSTEM,
            messages=MESSAGES,
            on_text=broken,
        )

    assert len(fake_api.requests) == 1
    assert waits == []


def test_it_answers_offline_without_opening_a_connection(fake_api, settings, monkeypatch):
    settings.COMPANION_OFFLINE = True

    def no_network(*args, **kwargs):
        raise AssertionError("offline mode opened a connection")

    monkeypatch.setattr(socket, "create_connection", no_network)
    pieces: list[str] = []
    message = "## Now\nTuesday evening\n\n## Message\n<luna><say>are you there?</say></luna>"

    messages = [{"role": "user", "content": message}]

    reply = complete(
        component="heart",
        system=SYSTEM,
        messages=messages,
        offline_answer=partial(offline.reply, system=SYSTEM, messages=messages),
        on_text=pieces.append,
    )

    assert fake_api.requests == []
    assert isinstance(reply, Reply)
    assert reply.offline is True
    assert reply.model == "offline"
    assert reply.usage.cache_read_tokens == reply.usage.cache_write_tokens == 0
    assert reply.usage.input_tokens == math.ceil(len(SYSTEM[0]["text"] + message) / 4)
    assert reply.usage.output_tokens == math.ceil(len(reply.text) / 4)
    assert 2 <= len(pieces) <= claude.OFFLINE_CHUNKS
    assert pieces[-1] == reply.text
    assert all(reply.text.startswith(piece) for piece in pieces)
    parsed = parse(reply.text, identities=["claude"])
    assert not parsed.is_secret
    assert "are you there?" in parsed.display_text


@pytest.mark.store_free  # a process of its own that only imports
def test_it_does_not_import_the_sdk_at_start_up():
    code = (
        "import sys, django; django.setup(); import silentstar.claude, heart.offline; "
        "print('anthropic' in sys.modules)"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "silentstar.settings"}
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=60
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_it_fakes_count_tokens_for_the_real_sdk(fake_api):
    import anthropic

    with anthropic.Anthropic(api_key="test-key", max_retries=0) as client:
        counted = client.messages.count_tokens(model="claude-opus-5-5", messages=MESSAGES)
        message = client.messages.create(model="claude-opus-5-5", max_tokens=10, messages=MESSAGES)

    assert counted.input_tokens > 0
    assert message.content[0].text == DEFAULT_REPLY
    assert fake_api.requests[0]["model"] == "claude-opus-5-5"
