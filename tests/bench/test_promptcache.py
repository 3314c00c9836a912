"""The prompt cache's rules: minimum, TTLs, the lookback, breakpoints, models and the sums."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.promptcache import IMAGE_TOKENS, CacheRuleError, PromptCache, prompt_blocks

pytestmark = pytest.mark.store_free

MODEL = "claude-test"
FIVE_MINUTES = {"type": "ephemeral"}
ONE_HOUR = {"type": "ephemeral", "ttl": "1h"}


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def text(tokens: int, mark: dict | None = None, letter: str = "a") -> dict:
    """A text block of exactly ``tokens`` tokens (four characters each)."""
    block = {"type": "text", "text": letter * (4 * tokens)}
    return {**block, "cache_control": mark} if mark else block


def body(system: list[dict], *user: dict, model: str = MODEL, tools=None) -> dict:
    request = {
        "model": model,
        "system": system,
        "messages": [{"role": "user", "content": list(user)}],
    }
    if tools:
        request["tools"] = tools
    return request


def usage(cache: PromptCache, request: dict) -> tuple[int, int, int]:
    """(read, written, uncached)."""
    got = cache.apply(request)
    return got.cache_read_input_tokens, got.cache_creation_input_tokens, got.input_tokens


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def cache(clock):
    return PromptCache({MODEL: 100}, clock=clock)


def test_it_writes_a_prefix_then_reads_it_and_the_rest_stays_uncached(cache):
    request = body([text(150, FIVE_MINUTES)], text(30))

    assert usage(cache, request) == (0, 150, 30)
    assert usage(cache, request) == (150, 0, 30)


def test_it_writes_nothing_below_the_model_minimum_and_says_nothing(cache):
    short = body([text(99, FIVE_MINUTES)], text(30))
    assert usage(cache, short) == (0, 0, 129)
    assert usage(cache, short) == (0, 0, 129)

    exactly = body([text(100, FIVE_MINUTES, letter="b")], text(30))
    assert usage(cache, exactly) == (0, 100, 30)
    assert usage(cache, exactly) == (100, 0, 30)


def test_it_finds_the_minimum_of_a_dated_model_name(clock):
    cache = PromptCache({"claude-sonnet-4-5": 1024}, clock=clock)
    request = body([text(1000, FIVE_MINUTES)], model="claude-sonnet-4-5-20250929")
    assert usage(cache, request) == (0, 0, 1000)


def test_it_forgets_after_five_minutes_unless_a_read_refreshes_it(cache, clock):
    request = body([text(150, FIVE_MINUTES)], text(10))
    assert usage(cache, request) == (0, 150, 10)

    clock.now += 299
    assert usage(cache, request) == (150, 0, 10)
    clock.now += 299  # 598 s after the write, 299 after the read that refreshed it
    assert usage(cache, request) == (150, 0, 10)
    clock.now += 300
    assert usage(cache, request) == (0, 150, 10)


def test_a_read_refreshes_the_entry_it_read_even_without_a_breakpoint_on_it(cache, clock):
    system = [text(150)]
    assert usage(cache, body([text(150, FIVE_MINUTES)])) == (0, 150, 0)
    # Later requests mark only a block further on, a different one each time: the entry is found
    # by the lookback alone, and each read keeps it five more minutes.
    clock.now += 200
    assert usage(cache, body(system, text(10, FIVE_MINUTES, letter="b"))) == (150, 10, 0)
    clock.now += 200
    assert usage(cache, body(system, text(10, FIVE_MINUTES, letter="c"))) == (150, 10, 0)
    clock.now += 301
    assert usage(cache, body(system, text(10, FIVE_MINUTES, letter="d"))) == (0, 160, 0)


def test_it_keeps_a_one_hour_entry_for_an_hour(cache, clock):
    request = body([text(150, ONE_HOUR)], text(10))
    got = cache.apply(request)
    assert (got.ephemeral_1h_input_tokens, got.ephemeral_5m_input_tokens) == (150, 0)

    clock.now += 3599
    assert usage(cache, request) == (150, 0, 10)
    clock.now += 3600
    assert usage(cache, request) == (0, 150, 10)


def test_it_splits_the_written_tokens_by_the_ttl_of_their_breakpoints_segment(cache):
    request = body([text(120, ONE_HOUR), text(50)], text(70, FIVE_MINUTES), text(9))
    got = cache.apply(request)

    assert (got.ephemeral_1h_input_tokens, got.ephemeral_5m_input_tokens) == (120, 120)
    assert (got.cache_read_input_tokens, got.input_tokens) == (0, 9)
    again = cache.apply(request)
    assert (again.cache_read_input_tokens, again.cache_creation_input_tokens) == (240, 0)


def test_it_writes_from_the_end_of_what_it_read_to_the_last_breakpoint_that_wrote(cache):
    system = [text(150, FIVE_MINUTES)]
    assert usage(cache, body(system, text(10))) == (0, 150, 10)

    request = body(system, text(40), text(60, FIVE_MINUTES), text(7))
    assert usage(cache, request) == (150, 100, 7)
    assert usage(cache, request) == (250, 0, 7)


def test_it_looks_back_twenty_blocks_from_a_breakpoint_and_no_further(cache):
    def blocks(marked_at: int) -> list[dict]:
        return [text(10, FIVE_MINUTES if n == marked_at else None) for n in range(40)]

    first = body([], *blocks(9))  # writes the prefix of ten blocks, 100 tokens
    assert usage(cache, first) == (0, 100, 300)

    twenty_on = body([], *blocks(29))
    assert usage(cache, twenty_on) == (100, 200, 100)

    fresh = PromptCache({MODEL: 100}, clock=cache.clock)
    fresh.apply(first)
    twenty_one_on = body([], *blocks(30))
    assert usage(fresh, twenty_one_on) == (0, 310, 90)


def test_it_refuses_more_than_four_breakpoints_and_changes_nothing(cache):
    request = body([text(100, FIVE_MINUTES) for _ in range(5)])

    with pytest.raises(CacheRuleError, match="A maximum of 4 blocks with cache_control"):
        cache.apply(request)

    four = body([text(100, FIVE_MINUTES) for _ in range(4)])
    assert usage(cache, four) == (0, 400, 0)


def test_it_refuses_a_one_hour_breakpoint_after_a_five_minute_one(cache):
    with pytest.raises(CacheRuleError, match="ttl='1h' must not come after one with ttl='5m'"):
        cache.apply(body([text(100, FIVE_MINUTES)], text(100, ONE_HOUR)))
    with pytest.raises(CacheRuleError, match="ttl"):
        cache.apply(body([text(100, {"type": "ephemeral", "ttl": "10m"})]))
    with pytest.raises(CacheRuleError, match="ephemeral"):
        cache.apply(body([text(100, {"type": "forever"})]))

    assert usage(cache, body([text(100, ONE_HOUR)], text(100, FIVE_MINUTES))) == (0, 200, 0)


def test_it_keeps_a_cache_per_model(cache, clock):
    cache.minimums = {MODEL: 100, "claude-other": 100}
    request = body([text(150, FIVE_MINUTES)])

    assert usage(cache, request) == (0, 150, 0)
    assert usage(cache, {**request, "model": "claude-other"}) == (0, 150, 0)
    assert usage(cache, request) == (150, 0, 0)


def test_it_orders_the_prefix_tools_then_system_then_messages(cache):
    tools = [{"name": "look", "description": "x" * 400, "input_schema": {"type": "object"}}]
    request = body([text(150, FIVE_MINUTES)], text(10), tools=tools)
    usage(cache, request)

    changed_message = body([text(150, FIVE_MINUTES)], text(20, letter="z"), tools=tools)
    assert usage(cache, changed_message)[0] > 150  # the tool and the system prompt are read
    changed_tool = [{**tools[0], "description": "y" * 400}]
    assert usage(cache, body([text(150, FIVE_MINUTES)], text(10), tools=changed_tool))[0] == 0


def test_it_reads_a_string_as_one_text_block_and_leaves_the_marks_out_of_the_key(cache):
    marked = {"model": MODEL, "system": [text(150, FIVE_MINUTES)], "messages": []}
    as_string = {
        "model": MODEL,
        "system": "a" * 600,
        "messages": [{"role": "user", "content": "hi"}],
    }
    usage(cache, marked)

    blocks = prompt_blocks(as_string)
    assert [block.tokens for block in blocks] == [150, 1]
    assert blocks[0].key == prompt_blocks(marked)[0].key


def test_it_counts_an_image_as_a_fixed_figure():
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "Zg=="},
    }
    blocks = prompt_blocks(body([], image, text(3)))
    assert [block.tokens for block in blocks] == [IMAGE_TOKENS, 3]


def test_a_message_boundary_is_part_of_the_prefix(cache):
    together = {
        "model": MODEL,
        "messages": [{"role": "user", "content": [text(100), text(60, FIVE_MINUTES)]}],
    }
    apart = {
        "model": MODEL,
        "messages": [
            {"role": "user", "content": [text(100)]},
            {"role": "assistant", "content": [text(60, FIVE_MINUTES)]},
        ],
    }
    usage(cache, together)
    assert usage(cache, apart) == (0, 160, 0)


ttl_marks = st.sampled_from([None, None, None, FIVE_MINUTES, ONE_HOUR])


@st.composite
def requests(draw) -> dict:
    blocks = [
        text(draw(st.integers(0, 80)), draw(ttl_marks), letter=draw(st.sampled_from("ab")))
        for _ in range(draw(st.integers(0, 30)))
    ]
    marked = [b for b in blocks if "cache_control" in b]
    for block in marked[4:]:
        del block["cache_control"]
    # Longer TTLs first: the marks of one request are all 1h up to some point, then 5m.
    ttls = sorted(b["cache_control"].get("ttl", "5m") for b in marked[:4])
    for block, ttl in zip(marked[:4], ttls, strict=True):
        block["cache_control"] = ONE_HOUR if ttl == "1h" else FIVE_MINUTES
    split = draw(st.integers(0, len(blocks)))
    return body(blocks[:split], *blocks[split:], model=draw(st.sampled_from([MODEL, "claude-b"])))


@given(st.lists(st.tuples(requests(), st.floats(0, 4000)), max_size=12))
def test_the_three_figures_add_up_to_the_whole_prompt(sequence):
    clock = Clock()
    cache = PromptCache({MODEL: 50, "claude-b": 120}, clock=clock)
    for request, wait in sequence:
        clock.now += wait
        got = cache.apply(request)
        whole = sum(block.tokens for block in prompt_blocks(request))
        assert got.total == whole
        assert min(got.cache_read_input_tokens, got.input_tokens) >= 0
        assert min(got.ephemeral_5m_input_tokens, got.ephemeral_1h_input_tokens) >= 0
        again = cache.apply(request)  # at once: whatever was written is read
        assert again.cache_creation_input_tokens == 0
        assert again.cache_read_input_tokens >= got.cache_read_input_tokens
