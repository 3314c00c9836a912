"""The fake Messages API's prompt cache, seen through the real SDK as the API's own fields."""

import anthropic
import pytest

from bench.fakeapi import FakeMessagesAPI, FakeReply
from bench.promptcache import PromptCache

pytestmark = pytest.mark.store_free

MODEL = "claude-opus-5-5"  # its cache keeps prefixes of 512 tokens and more
SYSTEM = [{"type": "text", "text": "w" * 4 * 600, "cache_control": {"type": "ephemeral"}}]
MESSAGES = [{"role": "user", "content": "Are you there?"}]  # 4 tokens


@pytest.fixture
def client(fake_api):
    with anthropic.Anthropic(api_key="test-key", max_retries=0) as sdk:
        yield sdk


def test_two_identical_requests_report_a_write_then_a_read(fake_api, client):
    first = client.messages.create(model=MODEL, max_tokens=10, system=SYSTEM, messages=MESSAGES)
    second = client.messages.create(model=MODEL, max_tokens=10, system=SYSTEM, messages=MESSAGES)

    assert (first.usage.cache_creation_input_tokens, first.usage.cache_read_input_tokens) == (
        600,
        0,
    )
    assert first.usage.cache_creation.ephemeral_5m_input_tokens == 600
    assert first.usage.cache_creation.ephemeral_1h_input_tokens == 0
    assert first.usage.input_tokens == 4
    assert second.usage.cache_creation_input_tokens == 0
    assert second.usage.cache_read_input_tokens == 600
    assert second.usage.input_tokens == 4
    assert [usage["cache_read_input_tokens"] for usage in fake_api.usages] == [0, 600]


def test_a_streamed_reply_reports_the_cache_in_its_opening_event(fake_api, client):
    system = [{**SYSTEM[0], "cache_control": {"type": "ephemeral", "ttl": "1h"}}]
    with client.messages.stream(
        model=MODEL, max_tokens=10, system=system, messages=MESSAGES
    ) as stream:
        message = stream.get_final_message()

    assert message.usage.cache_creation.ephemeral_1h_input_tokens == 600
    assert message.usage.cache_creation_input_tokens == 600
    assert message.usage.output_tokens == fake_api.usages[0]["output_tokens"] > 1


def test_it_answers_400_to_a_fifth_breakpoint_as_the_api_does(fake_api, client):
    marked = [{"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}] * 5

    with pytest.raises(anthropic.BadRequestError, match="A maximum of 4 blocks") as refused:
        client.messages.create(model=MODEL, max_tokens=10, system=marked, messages=MESSAGES)

    assert refused.value.body["error"]["type"] == "invalid_request_error"
    assert fake_api.usages == []


def test_a_scripted_reply_keeps_its_own_figures(fake_api, client):
    fake_api.push(FakeReply(input_tokens=7, cache_read_input_tokens=300), FakeReply())

    scripted = client.messages.create(model=MODEL, max_tokens=10, system=SYSTEM, messages=MESSAGES)
    cached = client.messages.create(model=MODEL, max_tokens=10, system=SYSTEM, messages=MESSAGES)

    assert (scripted.usage.input_tokens, scripted.usage.cache_read_input_tokens) == (7, 300)
    assert scripted.usage.cache_creation_input_tokens == 0
    # The cache saw the scripted request all the same: the second one reads what it wrote.
    assert cached.usage.cache_read_input_tokens == 600


def test_it_runs_a_cache_of_the_tests_choosing(monkeypatch):
    moment = [0.0]
    with FakeMessagesAPI(cache=PromptCache({MODEL: 4096}, clock=lambda: moment[0])) as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        with anthropic.Anthropic(api_key="test-key", max_retries=0) as sdk:
            reply = sdk.messages.create(
                model=MODEL, max_tokens=10, system=SYSTEM, messages=MESSAGES
            )

    assert reply.usage.cache_creation_input_tokens == 0  # 600 tokens: under this minimum
    assert reply.usage.input_tokens == 604
