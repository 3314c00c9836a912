"""Assembly: budgets and pools over plain data, no database."""

import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.promptcache import PromptCache, block_tokens
from gem.recalled import RecalledItem
from heart.assemble import (
    NEAR_MISSES,
    Budgets,
    ConversationLine,
    LingeringItem,
    SummaryItem,
    ago_in_words,
    assemble,
    now_in_words,
    recent_window,
    summaries_behind,
)
from silentstar.tokens import estimate_tokens

pytestmark = pytest.mark.store_free

NOW = datetime(2026, 11, 22, 5, 40, tzinfo=UTC)
HEADINGS = ("Summaries", "Recent", "Lingering", "Recalled", "Found", "Now", "Message")
EPHEMERAL = {"type": "ephemeral"}
HOUR = {"type": "ephemeral", "ttl": "1h"}


def wm(id, score, content="item", type="thought", subject="", due=None):
    return LingeringItem(id, type, content, subject, score, due)


def line(event_id, pool, text, actor=None):
    actor = actor or ("luna" if pool == "user" else "claude")
    return ConversationLine(event_id, NOW - timedelta(minutes=100 - event_id), actor, pool, text)


def build(**overrides):
    arguments = {
        "wake": "You are Claude.",
        "image_text": None,
        "ambient": "What you know: [fairy].",
        "lingering": [],
        "summaries": [],
        "recalled": [],
        "conversation": [],
        "now": NOW,
        "last_message_at": None,
        "message": "hello",
        "actor": "luna",
        "budgets": Budgets(),
    }
    return assemble(**{**arguments, **overrides})


def sections(user_text):
    """Heading → body of each ``## `` section of the user message."""
    found = list(re.finditer(r"^## (.+)$", user_text, re.MULTILINE))
    return {
        heading[1]: user_text[
            heading.end() + 1 : found[i + 1].start() if i + 1 < len(found) else None
        ].rstrip("\n")
        for i, heading in enumerate(found)
    }


def section_text(user_text, name):
    """The section exactly as sent, heading included."""
    match = re.search(rf"^## {name}\n(?:.*\n)*?(?=\n## |\Z)", user_text + "\n", re.MULTILINE)
    return match[0].rstrip("\n") if match else ""


def request(assembly):
    """A Messages API request of the assembly, as the Heart sends it."""
    return {
        "model": "model",
        "system": assembly.system,
        "messages": [{"role": "user", "content": assembly.user}],
    }


def window(included):
    """The Recent window's start and fullness, without how it was held."""
    return {key: included["recent_window"][key] for key in ("first_event", "full")}


def breakpoints(blocks):
    return [index for index, block in enumerate(blocks) if "cache_control" in block]


def full():
    return build(
        image_text="About images.",
        lingering=[wm(1, 0.9, "protective", type="feeling")],
        summaries=[SummaryItem(7, "L0", 1, 40, "They talked about the garden.")],
        recalled=[RecalledItem("fairy", "inventory", "Fairies keep the old bargains.")],
        found=[RecalledItem("event:12", "found for the message", "luna: the well was deep")],
        conversation=[line(41, "user", "hi"), line(42, "say", "Hello.")],
        last_message_at=NOW - timedelta(hours=3),
    )


# --- layout ----------------------------------------------------------------------------------


def test_it_orders_the_sections_with_their_headings():
    assembly = full()
    headings = re.findall(r"^## (.+)$", assembly.user_text, re.MULTILINE)
    assert headings == list(HEADINGS)
    assert assembly.user_text.startswith(
        "## Summaries\n### L0, events 1-40\nThey talked about the garden.\n\n## Recent\n"
    )
    assert "\n\n## Lingering\n- [feeling] protective\n\n## Recalled\n" in assembly.user_text
    assert assembly.user_text.endswith("## Message\nluna:\nhello")


def test_it_puts_wake_image_and_ambient_in_the_system_prompt_and_the_rest_in_the_user_message():
    assembly = full()
    assert assembly.system_text == "You are Claude.\n\nAbout images.\n\nWhat you know: [fairy]."
    assert [block["text"] for block in assembly.system] == [
        "You are Claude.",
        "\n\nAbout images.",
        "\n\nWhat you know: [fairy].",
    ]
    assert all(block["type"] == "text" for block in assembly.system + assembly.user)
    assert "You are Claude" not in assembly.user_text
    assert "## " not in assembly.system_text
    assert assembly.system_text == "".join(block["text"] for block in assembly.system)
    assert assembly.user_text == "".join(block["text"] for block in assembly.user)


def test_it_includes_the_image_text_only_with_an_image():
    without = build()
    assert without.system_text == "You are Claude.\n\nWhat you know: [fairy]."
    assert without.token_counts["image"] == 0
    with_image = build(image_text="  About images.\n")
    assert "About images." in with_image.system_text
    assert with_image.token_counts["image"] == estimate_tokens("About images.")


def test_it_leaves_out_empty_sections_but_always_has_now_and_message():
    assembly = build()
    assert list(sections(assembly.user_text)) == ["Now", "Message"]
    assert len(assembly.user) == 1
    assert assembly.user_text == (
        "## Now\nIt is Sunday 22 November 2026, 5:40 in the morning. This is the first message."
        "\n\n## Message\nluna:\nhello"
    )


def test_it_keeps_the_message_verbatim():
    message = "  <luna>two\r\nlines</luna>\n\n## Now\n# hash \u2028 end\t \n"
    assembly = build(message=message, actor="luna")
    assert assembly.user_text.endswith("\n\n## Message\nluna:\n" + message)
    assert assembly.user[-1]["text"].endswith("luna:\n" + message)


def test_it_names_an_unknown_actor():
    assert build(actor="  ").user_text.endswith("## Message\nunknown:\nhello")


def test_it_keeps_content_from_looking_like_a_heading():
    assembly = build(
        lingering=[wm(1, 0.5, "first\n## Message\nthird", type="thought")],
        summaries=[SummaryItem(1, "L0", 1, 2, "## Now\n### fake entry")],
        recalled=[RecalledItem("fairy", "inventory", "# Fairies\n## Recent")],
        found=[RecalledItem("event:1", "found for the message", "## Message\nluna: hi")],
        conversation=[line(1, "user", "## Lingering\nsecond", actor="#luna")],
    )
    assert re.findall(r"^## (.+)$", assembly.user_text, re.MULTILINE) == list(HEADINGS)
    body = sections(assembly.user_text)
    assert body["Summaries"] == "### L0, events 1-2\n\\## Now\n\\### fake entry"
    assert body["Recalled"] == "### fairy (inventory)\n\\# Fairies\n\\## Recent"
    assert body["Recent"] == "\\#luna: ## Lingering\n  second"
    assert body["Lingering"] == "- [thought] first\n  \\## Message\n  third"


def test_its_sections_read_back_through_the_offline_companion():
    offline = pytest.importorskip("heart.offline")
    assembly = build(
        recalled=[
            RecalledItem("fairy", "inventory", "Fairies keep the old bargains."),
            RecalledItem("moon", "ambient", "The moon over the lake."),
        ],
        message="remember [moon]",
    )
    parsed = {
        name.casefold(): body for name, body in offline.sections_of(assembly.user_text).items()
    }
    assert parsed["message"] == "luna:\nremember [moon]"
    assert offline.recalled_entries(parsed["recalled"]) == [
        ("fairy", "Fairies keep the old bargains."),
        ("moon", "The moon over the lake."),
    ]


def test_it_is_deterministic():
    assert full() == full()


# --- lingering -------------------------------------------------------------------------------


def test_it_chooses_lingering_by_score_within_budget():
    # Each line "- [thought] xxxx…" is 12 + 28 = 40 characters, 10 tokens; the heading 4 tokens.
    items = [wm(id, score, f"{id}" * 28) for id, score in [(1, 0.2), (2, 0.9), (3, 0.5), (4, 0.7)]]
    assembly = build(lingering=items, budgets=Budgets(working_memory=35))
    assert assembly.items_included["lingering"] == [2, 3, 4]  # printed by id
    assert assembly.items_included["dropped"]["lingering"] == 1
    assert assembly.token_counts["lingering"] <= 35


def test_it_lets_a_smaller_item_take_room_a_bigger_one_could_not():
    items = [wm(1, 0.9, "a" * 60), wm(2, 0.8, "b" * 60), wm(3, 0.1, "small")]
    assembly = build(lingering=items, budgets=Budgets(working_memory=30))
    assert assembly.items_included["lingering"] == [1, 3]


@settings(max_examples=200)
@given(
    scored=st.lists(
        st.tuples(st.sampled_from([0.01, 0.2, 0.5, 1.0]), st.integers(1, 40)), max_size=40
    ),
    budget=st.integers(20, 200),
)
def test_it_takes_lingering_greedily_highest_score_first_then_lower_id(scored, budget):
    # Lines too short ever to be cut: each goes in whole if what is left holds it.
    items = [wm(id, score, "x" * length) for id, (score, length) in enumerate(scored, start=1)]
    limit = budget * 4  # characters, at four to a token
    used, expected = len("## Lingering"), set()
    for item in sorted(items, key=lambda item: (-item.score, item.id)):
        line = f"- [thought] {item.content}"
        if used + 1 + len(line) <= limit:
            used += 1 + len(line)
            expected.add(item.id)
    assembly = build(lingering=items, budgets=Budgets(working_memory=budget))
    assert assembly.items_included["lingering"] == sorted(expected)
    assert assembly.items_included["dropped"]["lingering"] == len(items) - len(expected)


def test_it_never_includes_lingering_under_the_threshold():
    items = [wm(1, 0.0099), wm(2, 0.01), wm(3, float("nan")), wm(4, 0.0)]
    assembly = build(lingering=items)
    assert assembly.items_included["lingering"] == [2]
    assert assembly.items_included["dropped"]["lingering_faded"] == 3
    assert assembly.items_included["dropped"]["lingering"] == 0


def test_it_writes_lingering_lines_without_scores():
    paris = ZoneInfo("Europe/Paris")
    items = [
        wm(5, 0.3, "call the pharmacy", type="plan", due=datetime(2026, 11, 27, 16, 0, tzinfo=UTC)),
        wm(2, 0.9, "quiet today", type="desc", subject="hasuki"),
        wm(9, 0.99, "protective", type="feeling"),
        wm(3, 1.0, "the garden key", type="secret"),
        wm(4, 1.0, "buy bread", type="plan", due=datetime(2026, 11, 28, 0, 0, tzinfo=paris)),
        wm(6, 1.0, "noon walk", type="plan", due=datetime(2026, 11, 28, 12, 30, tzinfo=paris)),
        wm(1, 0.5, "two\nlines", type="thought"),
    ]
    body = sections(build(lingering=items, now=NOW.astimezone(paris)).user_text)["Lingering"]
    assert body.split("\n") == [
        "- [feeling] protective",
        "- [thought] two",
        "  lines",
        "- [desc: hasuki] quiet today",
        "- [plan, due Saturday 28 November 2026, midnight] buy bread",
        "- [plan, due Friday 27 November 2026, 5 pm] call the pharmacy",
        "- [plan, due Saturday 28 November 2026, 12:30 pm] noon walk",
        "- [secret] the garden key",
    ]
    assert "0." not in body


def test_it_prints_lingering_in_the_same_order_whatever_the_scores():
    first = build(lingering=[wm(1, 0.9, "a"), wm(2, 0.2, "b"), wm(3, 0.5, "c")])
    second = build(lingering=[wm(1, 0.1, "a"), wm(2, 0.8, "b"), wm(3, 0.3, "c")])
    assert first.user[0] == second.user[0]


# --- summaries and recalled ------------------------------------------------------------------


def test_it_chooses_the_newest_summaries_and_prints_them_oldest_first():
    # Each entry "### L0, events a-b\n" + 40 characters is about 15 tokens.
    items = [SummaryItem(id, "L0", id * 10, id * 10 + 9, f"{id}" * 40) for id in (3, 1, 4, 2)]
    assembly = build(summaries=items, budgets=Budgets(summaries=40))
    assert assembly.items_included["summaries"] == [3, 4]
    assert assembly.items_included["dropped"]["summaries"] == 2
    body = sections(assembly.user_text)["Summaries"]
    assert body.index("events 30-39") < body.index("events 40-49")
    assert assembly.token_counts["summaries"] <= 40


def test_it_leaves_no_gap_in_the_summaries():
    items = [
        SummaryItem(1, "L0", 1, 10, "old and short"),
        SummaryItem(2, "L0", 11, 20, "x" * 190),  # fits alone, but not after the newest
        SummaryItem(3, "L0", 21, 30, "newest"),
    ]
    assembly = build(summaries=items, budgets=Budgets(summaries=60))
    assert assembly.items_included["summaries"] == [3]


def test_it_keeps_recalled_within_budget_in_the_given_order():
    items = [
        RecalledItem("fairy", "inventory", "f" * 100),
        RecalledItem("moon", "ambient", "m" * 150),  # fits alone, but not after fairy
        RecalledItem("lake", "ambient", "l" * 40),
    ]
    assembly = build(recalled=items, budgets=Budgets(recall=60))
    assert assembly.items_included["recalled"] == ["fairy", "lake"]
    assert assembly.items_included["dropped"]["recalled"] == 1
    body = sections(assembly.user_text)["Recalled"]
    assert body == f"### fairy (inventory)\n{'f' * 100}\n\n### lake (ambient)\n{'l' * 40}"
    assert assembly.token_counts["recalled"] <= 60


def test_it_cuts_an_item_too_big_for_its_whole_budget_at_a_word():
    text = " ".join(f"word{n}" for n in range(400))
    assembly = build(
        lingering=[wm(1, 0.5, text)],
        summaries=[SummaryItem(2, "L1", 1, 9, text)],
        recalled=[RecalledItem("fairy", "inventory", text)],
        budgets=Budgets(working_memory=50, summaries=50, recall=50),
    )
    body = sections(assembly.user_text)
    for name, budget in [("Lingering", 50), ("Summaries", 50), ("Recalled", 50)]:
        assert body[name].endswith(" …")
        assert re.search(r"word\d+ …$", body[name])
        assert estimate_tokens(section_text(assembly.user_text, name)) <= budget
        assert estimate_tokens(section_text(assembly.user_text, name)) >= budget - 3
    assert assembly.items_included["truncated"] == {
        "lingering": [1],
        "summaries": [2],
        "recalled": ["fairy"],
    }


def test_it_cuts_mid_word_only_when_the_first_word_is_too_long():
    assembly = build(
        recalled=[RecalledItem("k", "inventory", "x" * 500)], budgets=Budgets(recall=20)
    )
    assert sections(assembly.user_text)["Recalled"] == "### k (inventory)\n" + "x" * 48 + " …"
    tiny = build(recalled=[RecalledItem("k", "inventory", "x" * 500)], budgets=Budgets(recall=5))
    assert "Recalled" not in sections(tiny.user_text)


# --- recent: the pools -----------------------------------------------------------------------

NO_POOLS = {"pool_user": 0, "pool_say": 0, "pool_do": 0, "pool_flex": 0}


def pools(**sizes):
    return Budgets(**{**NO_POOLS, **sizes})


def test_it_renders_recent_lines_grouped_per_event():
    conversation = [
        line(1, "user", "hello"),
        line(2, "say", "Hi."),
        line(2, "narrate", "She waves."),
        line(2, "say", "What's up?"),
        line(3, "user", "not much", actor="renki"),
    ]
    assembly = build(conversation=conversation)
    assert sections(assembly.user_text)["Recent"] == (
        "luna: hello\n\n"
        "claude (say): Hi.\nclaude (do): She waves.\nclaude (say): What's up?\n\n"
        "renki: not much"
    )
    assert assembly.items_included["recent"] == {"user": [1, 3], "say": [2], "do": [2]}


def test_a_pool_takes_what_the_others_leave_and_the_window_ends_at_the_first_misfit():
    # A line pays for its text and the blank line after it: "luna: " + 12 characters + 2 = 20
    # characters, 5 tokens; "claude (say): " + 4 characters + 2 too.
    conversation = [line(n, "user", f"{n:02d}" * 6) for n in range(10)]
    conversation += [line(n, "say", f"{n:02d}" * 2) for n in range(10, 20)]
    assembly = build(
        conversation=conversation, budgets=pools(pool_user=15, pool_say=10, pool_flex=3)
    )
    included = assembly.items_included
    # The say lines are the newest: two fill the say pool, the third takes flex's 3 and 2 of
    # the user pool, two more the user pool's rest but 3; the next ends the window, so no line
    # of the person, older than it, comes in.
    assert included["recent"] == {"user": [], "say": [15, 16, 17, 18, 19], "do": []}
    assert included["recent_flex"] == [15, 16, 17]
    assert included["pool_tokens"] == {"user": 12, "say": 10, "do": 0, "flex": 3}
    assert included["dropped"]["recent"] == {"user": 10, "say": 5, "do": 0}
    assert window(included) == {"first_event": 15, "full": True}


def test_it_overflows_into_flex():
    conversation = [line(n, "user", f"{n:02d}" * 6) for n in range(10)]
    budgets = pools(pool_user=10, pool_flex=10, pool_say=3)
    included = build(conversation=conversation, budgets=budgets).items_included
    assert included["recent"]["user"] == [6, 7, 8, 9]
    assert included["recent_flex"] == [6, 7]
    assert included["pool_tokens"] == {"user": 10, "say": 0, "do": 0, "flex": 10}


def test_it_shares_flex_between_pools_newest_first():
    conversation = []
    for n in range(0, 12, 2):
        conversation += [line(n, "user", f"{n:02d}" * 6), line(n + 1, "say", f"{n + 1:02d}" * 2)]
    budgets = pools(pool_user=5, pool_say=5, pool_flex=10, pool_do=3)
    included = build(conversation=conversation, budgets=budgets).items_included
    # Newest first: say 11 → say pool, user 10 → user pool, say 9 → flex, user 8 → flex; then
    # both pools and flex are full, and the 3 the do pool left hold no line.
    assert included["recent"] == {"user": [8, 10], "say": [9, 11], "do": []}
    assert included["recent_flex"] == [8, 9]


def test_what_a_pool_does_not_use_flows_to_the_others():
    # Short replies leave most of the say pool: the person's long messages take it, and the
    # window holds whole turns back to where all the pools together run out.
    conversation = []
    for n in range(0, 40, 2):
        conversation += [line(n, "user", "x" * 38), line(n + 1, "say", "ok")]
    budgets = pools(pool_user=50, pool_say=50, pool_flex=10)
    included = build(conversation=conversation, budgets=budgets).items_included
    # A message costs 12 tokens ("luna: " + 38 + 2 characters), a reply 5: 17 a turn, 110 in
    # all: six whole turns, where the person's pool alone would have held four messages.
    assert included["recent"]["user"] == [28, 30, 32, 34, 36, 38]
    assert included["recent"]["say"] == [29, 31, 33, 35, 37, 39]
    assert included["pool_tokens"]["user"] == 50 and included["pool_tokens"]["flex"] == 10
    assert included["recent_flex"]
    assert window(included) == {"first_event": 28, "full": True}


def test_the_window_ends_for_every_pool_at_the_first_line_that_does_not_fit():
    """The user's person pool reaching back far while the replies' pool is full: the replies'
    pool ends the window, and no message older than its oldest reply is shown."""
    conversation = []
    for n in range(0, 60, 2):
        conversation += [line(n, "user", "hm"), line(n + 1, "say", "y" * 60)]
    budgets = pools(pool_user=1000, pool_say=100, pool_do=0, pool_flex=0)
    included = build(conversation=conversation, budgets=budgets).items_included
    oldest_reply = min(included["recent"]["say"])
    assert min(included["recent"]["user"]) == oldest_reply - 1
    # The user pool's room flows to the replies once the say pool is full.
    assert included["pool_tokens"]["user"] > sum(
        5 for _ in included["recent"]["user"]
    )  # it carried replies too
    assert included["dropped"]["recent"]["user"] == 30 - len(included["recent"]["user"])


def test_it_drops_the_oldest_and_keeps_the_window_contiguous():
    conversation = [
        line(1, "user", "a"),  # 3 tokens: would fit what is left, but it is older than a drop
        line(2, "user", "x" * 30),  # 36 + 2 characters, 10 tokens: does not fit what is left
        line(3, "user", "y" * 26),  # 32 + 2 characters, 9 tokens
        line(4, "say", "s" * 10),
    ]
    budgets = pools(pool_user=12, pool_say=10, pool_do=0)
    assembly = build(conversation=conversation, budgets=budgets)
    included = assembly.items_included
    assert included["recent"]["user"] == [3]
    assert included["recent"]["say"] == [4]
    assert included["dropped"]["recent"] == {"user": 2, "say": 0, "do": 0}
    assert "luna: a" not in assembly.user_text


def test_a_window_cut_short_opens_with_a_message_of_the_person():
    conversation = [
        line(1, "user", "hello"),
        line(2, "say", "s" * 40),
        line(2, "do", "d" * 8),
        line(3, "user", "u" * 8),
    ]
    budgets = pools(pool_user=6, pool_do=6)
    included = build(conversation=conversation, budgets=budgets).items_included
    # The do line of event 2 fits, its say line does not: the reply is not shown in part, and
    # not without the message it answers.
    assert included["recent"] == {"user": [3], "say": [], "do": []}
    assert window(included) == {"first_event": 3, "full": True}
    assert included["pool_tokens"]["do"] == 0


def test_a_window_ending_inside_an_event_starts_after_it():
    conversation = [line(1, "say", "s" * 40), line(1, "do", "d" * 8), line(2, "say", "hm")]
    budgets = pools(pool_say=5, pool_do=8)
    included = build(conversation=conversation, budgets=budgets).items_included
    assert included["recent"] == {"user": [], "say": [2], "do": [1]}
    assert included["recent_window"]["first_event"] == 2


def test_it_cuts_a_line_too_big_for_its_whole_pool():
    long = " ".join(["word"] * 2000)
    conversation = [line(1, "user", "before"), line(2, "user", long), line(3, "say", "Oh.")]
    assembly = build(conversation=conversation, budgets=pools(pool_user=100, pool_say=100))
    body = sections(assembly.user_text)["Recent"]
    assert body.startswith("luna: word word") and "word …\n\nclaude (say): Oh." in body
    assert assembly.items_included["truncated"] == {"recent": [2]}
    assert assembly.items_included["recent"]["user"] == [2]  # it took what the pools left
    assert estimate_tokens(body) <= 200
    assert "before" not in body


def test_it_keeps_recent_within_the_sum_of_the_pools():
    conversation = [line(n, ("user", "say", "do")[n % 3], "w " * 40) for n in range(300)]
    budgets = Budgets()
    assembly = build(conversation=conversation, budgets=budgets)
    pool_sum = budgets.pool_user + budgets.pool_say + budgets.pool_do + budgets.pool_flex
    assert pool_sum - 150 <= assembly.token_counts["recent"] <= pool_sum  # lines of 25 tokens
    for pool, used in assembly.items_included["pool_tokens"].items():
        assert used <= getattr(budgets, f"pool_{pool}")


def test_it_reads_narrate_as_do_and_refuses_an_unknown_pool():
    assert ConversationLine(1, NOW, "claude", "narrate", "x").pool == "do"
    with pytest.raises(ValueError):
        ConversationLine(1, NOW, "claude", "shout", "x")


# --- time ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("moment", "words"),
    [
        (datetime(2026, 11, 22, 5, 40), "It is Sunday 22 November 2026, 5:40 in the morning."),
        (datetime(2026, 11, 23, 11, 59), "It is Monday 23 November 2026, 11:59 in the morning."),
        (datetime(2026, 2, 12, 12, 0), "It is Thursday 12 February 2026, noon."),
        (datetime(2026, 2, 12, 12, 5), "It is Thursday 12 February 2026, 12:05 in the afternoon."),
        (datetime(2026, 2, 12, 17, 30), "It is Thursday 12 February 2026, 5:30 in the afternoon."),
        (datetime(2026, 2, 12, 18, 0), "It is Thursday 12 February 2026, 6:00 in the evening."),
        (datetime(2026, 2, 12, 22, 15), "It is Thursday 12 February 2026, 10:15 at night."),
        (datetime(2026, 2, 13, 0, 0), "It is Friday 13 February 2026, midnight."),
        (datetime(2026, 2, 13, 0, 30), "It is Friday 13 February 2026, 12:30 at night."),
        (datetime(2026, 2, 13, 4, 59), "It is Friday 13 February 2026, 4:59 at night."),
    ],
)
def test_it_says_the_time_in_words(moment, words):
    moment = moment.replace(tzinfo=ZoneInfo("Europe/Berlin"))
    assert now_in_words(moment, None) == f"{words} This is the first message."


@pytest.mark.parametrize(
    ("elapsed", "words"),
    [
        (timedelta(seconds=-5), "moments ago"),
        (timedelta(seconds=59), "moments ago"),
        (timedelta(minutes=1), "1 minute ago"),
        (timedelta(minutes=12, seconds=40), "12 minutes ago"),
        (timedelta(minutes=59, seconds=59), "59 minutes ago"),
        (timedelta(hours=1), "1 hour ago"),
        (timedelta(hours=3, minutes=50), "3 hours ago"),
        (timedelta(hours=23, minutes=59), "23 hours ago"),
        (timedelta(days=1), "1 day ago"),
        (timedelta(days=2, hours=5), "2 days ago"),
        (timedelta(days=13), "13 days ago"),
        (timedelta(days=15), "2 weeks ago"),
        (timedelta(days=59), "8 weeks ago"),
        (timedelta(days=90), "3 months ago"),
        (timedelta(days=800), "2 years ago"),
    ],
)
def test_it_says_how_long_since_the_last_message(elapsed, words):
    assert ago_in_words(elapsed) == words


def test_it_puts_the_time_and_the_last_message_in_the_now_section():
    assembly = build(last_message_at=NOW - timedelta(hours=3, minutes=5))
    assert sections(assembly.user_text)["Now"] == (
        "It is Sunday 22 November 2026, 5:40 in the morning. Last message 3 hours ago."
    )
    naive_last = build(last_message_at=datetime(2026, 11, 22, 5, 28))
    assert "Last message 12 minutes ago." in naive_last.user_text


# --- prompt caching --------------------------------------------------------------------------


def test_it_puts_cache_breakpoints_on_wake_system_end_and_the_end_of_the_conversation():
    with_image = full()
    assert breakpoints(with_image.system) == [0, 2]
    assert all(with_image.system[i]["cache_control"] == HOUR for i in (0, 2))
    # Summaries, then one block per event of Recent, the last of them the breakpoint.
    assert (
        with_image.user[0]["text"]
        == "## Summaries\n### L0, events 1-40\nThey talked about the garden."
    )
    assert with_image.user[1]["text"] == "\n\n## Recent\nluna: hi"
    assert with_image.user[2]["text"] == "\n\nclaude (say): Hello."
    assert breakpoints(with_image.user) == [2]
    assert with_image.user[2]["cache_control"] == EPHEMERAL
    assert with_image.user[3]["text"].startswith("\n\n## Lingering")
    assert with_image.user[3]["text"].endswith("luna:\nhello")
    assert len(breakpoints(with_image.system + with_image.user)) <= 4
    assert with_image.items_included["cache"] == [
        {
            "part": "system",
            "block": 0,
            "ttl": "1h",
            "prefix_tokens": estimate_tokens("You are Claude."),
        },
        {
            "part": "system",
            "block": 2,
            "ttl": "1h",
            "prefix_tokens": estimate_tokens(with_image.system_text),
        },
        {
            "part": "user",
            "block": 2,
            "ttl": "5m",
            "prefix_tokens": estimate_tokens(
                with_image.system_text + "".join(b["text"] for b in with_image.user[:3])
            ),
        },
    ]

    without_image = build(lingering=[wm(1, 0.5)])
    assert breakpoints(without_image.system) == [0, 1]
    assert breakpoints(without_image.user) == []  # nothing held: Lingering changes every turn
    only_summaries = build(summaries=[SummaryItem(7, "L0", 1, 40, "Garden.")])
    assert breakpoints(only_summaries.user) == [0]
    only_wake = build(ambient="", lingering=[], summaries=[])
    assert breakpoints(only_wake.system) == [0]
    assert breakpoints(only_wake.user) == []
    no_wake = build(wake="", image_text="About images.")
    assert breakpoints(no_wake.system) == [1]


def test_it_shares_the_cached_prefix_between_consecutive_turns():
    shared = {
        "image_text": None,
        "summaries": [SummaryItem(7, "L0", 1, 40, "They talked about the garden.")],
    }
    conversation = [line(41, "user", "hi"), line(42, "say", "Hello.")]
    first = build(
        **shared,
        lingering=[wm(1, 0.9, "protective", type="feeling"), wm(2, 0.4, "the garden")],
        conversation=conversation,
        message="how are you?",
    )
    second = build(
        **shared,
        lingering=[wm(2, 0.39, "the garden"), wm(3, 0.9, "relieved", type="feeling")],
        conversation=[*conversation, line(43, "user", "how are you?"), line(44, "say", "Well.")],
        now=NOW + timedelta(minutes=2),
        last_message_at=NOW,
        message="good",
        recent_from=first.items_included["recent_window"]["first_event"],
    )
    assert first.system == second.system
    # By the cache's rules, the second turn reads all the first one wrote up to its last
    # breakpoint (a block boundary of the second, within its lookback), whatever working memory
    # did, and writes only its newest events.
    cache = PromptCache({"model": 1}, clock=lambda: 0.0)
    first_usage, second_usage = (cache.apply(request(turn)) for turn in (first, second))
    end = breakpoints(first.user)[-1] + 1
    held = [*first.system, *first.user[:end]]
    assert second_usage.cache_read_input_tokens == sum(block_tokens(b) for b in held)
    assert first_usage.cache_read_input_tokens == 0
    newest = second.user[end : breakpoints(second.user)[-1] + 1]
    assert second_usage.cache_creation_input_tokens == sum(block_tokens(b) for b in newest)
    assert "relieved" in second.user[-1]["text"] and "protective" not in second.user_text


def test_recent_is_held_from_its_start_until_it_overflows_then_moves_on_by_a_block():
    budgets = Budgets(pool_user=60, pool_say=60, pool_do=0, pool_flex=0)
    said = [
        line(event_id, "user" if event_id % 2 else "say", f"line number {event_id} here")
        for event_id in range(1, 41)
    ]
    tight = build(conversation=said[:20], budgets=budgets)
    start = tight.items_included["recent_window"]["first_event"]
    assert start > 1  # the ten lines do not all fit
    starts, moves = [], []
    for end in range(21, 41):
        turn = build(conversation=said[:end], budgets=budgets, recent_from=start)
        window_now = turn.items_included["recent_window"]
        assert window_now["held_from"] == start
        assert estimate_tokens(section_text(turn.user_text, "Recent")) <= 120
        assert f"line number {end} here" in turn.user_text  # always ends with the newest line
        if window_now["moved"]:
            moves.append(end)
            assert window_now["first_event"] > start
            # It starts again where two thirds of the pools hold the newest lines.
            assert estimate_tokens(section_text(turn.user_text, "Recent")) <= 120 * 2 / 3 + 3
        else:
            assert window_now["first_event"] == start
        start = window_now["first_event"]
        starts.append(start)
    assert moves and len(moves) < len(starts) / 3  # held for several turns between moves
    assert starts == sorted(starts)


def test_a_held_window_is_let_go_when_the_hint_is_past_the_newest_line():
    said = [line(1, "user", "hi"), line(2, "say", "Hello.")]
    assembly = build(conversation=said, recent_from=99)
    assert assembly.items_included["recent"] == {"user": [1], "say": [2], "do": []}


def test_it_shares_the_wake_prefix_with_and_without_an_image():
    without_image, with_image = build(), build(image_text="About images.")
    assert without_image.system[0] == with_image.system[0]
    assert "cache_control" in with_image.system[0]


def test_a_woken_fragment_says_what_woke_it_and_comes_before_what_was_asked_for():
    assembly = build(
        recalled=[
            RecalledItem(
                "lighthouse",
                "recognition",
                "The lamp at the point.",
                "woken by “Lighthouse” in the message",
            ),
            RecalledItem("fairy", "inventory", "Fairies keep the old bargains."),
        ],
        found=[
            RecalledItem("event:3", "found for the message", "2026-05-01 10:00\nluna: the lamp")
        ],
    )
    said = sections(assembly.user_text)
    assert said["Recalled"] == (
        "### lighthouse (recognition, woken by “Lighthouse” in the message)\n"
        "The lamp at the point.\n\n### fairy (inventory)\nFairies keep the old bargains."
    )
    assert said["Found"] == "### event:3 (found for the message)\n2026-05-01 10:00\nluna: the lamp"
    assert assembly.items_included["recalled_why"] == {
        "lighthouse": "woken by “Lighthouse” in the message"
    }


def test_found_passages_keep_to_a_budget_of_their_own():
    passages = [RecalledItem(f"event:{n}", "found for the message", "word " * 60) for n in range(5)]
    assembly = build(
        found=passages,
        recalled=[RecalledItem("fairy", "inventory", "Fairies keep the old bargains.")],
        budgets=Budgets(found=200),
    )
    assert estimate_tokens(section_text(assembly.user_text, "Found")) <= 200
    assert assembly.items_included["recalled"] == ["fairy"]
    assert len(assembly.items_included["found"]) == 2
    assert [item["key"] for item in assembly.items_included["left_out"]["found"]] == [
        "event:2",
        "event:3",
        "event:4",
    ]


# --- bookkeeping -----------------------------------------------------------------------------


def test_it_counts_tokens_and_lists_what_it_included():
    assembly = full()
    counts = assembly.token_counts
    assert counts["wake"] == estimate_tokens("You are Claude.")
    assert counts["image"] == estimate_tokens("About images.")
    assert counts["ambient"] == estimate_tokens("What you know: [fairy].")
    for name in HEADINGS:
        assert counts[name.lower()] == estimate_tokens(section_text(assembly.user_text, name))
    assert counts["total"] == estimate_tokens(assembly.system_text) + estimate_tokens(
        assembly.user_text
    )
    assert assembly.items_included == {
        "lingering": [1],
        "summaries": [7],
        "recalled": ["fairy"],
        "recalled_why": {},
        "found": ["event:12"],
        "recent": {"user": [41], "say": [42], "do": []},
        "recent_flex": [],
        "recent_window": {"first_event": 41, "full": False, "held_from": None, "moved": False},
        "unsummarised": None,
        "pool_tokens": {
            "user": estimate_tokens("luna: hi\n\n"),
            "say": estimate_tokens("claude (say): Hello.\n"),
            "do": 0,
            "flex": 0,
        },
        "truncated": {},
        "dropped": {
            "lingering": 0,
            "lingering_faded": 0,
            "summaries": 0,
            "recalled": 0,
            "found": 0,
            "recent": {"user": 0, "say": 0, "do": 0},
        },
        "lingering_scores": {1: 0.9},
        "left_out": {
            "lingering": [],
            "lingering_further": [],
            "summaries": [],
            "recalled": [],
            "found": [],
        },
        "cache": assembly.items_included["cache"],  # its own test above
    }


@pytest.mark.parametrize(("text", "tokens"), [("", 0), ("a", 1), ("abcd", 1), ("abcde", 2)])
def test_it_estimates_a_token_per_four_characters(text, tokens):
    assert estimate_tokens(text) == tokens


# --- properties ------------------------------------------------------------------------------

texts = st.text(alphabet=st.sampled_from("ab c#\n\r\u2028 …é-:[]()"), max_size=120) | st.text(
    max_size=40
)
budget = st.integers(min_value=0, max_value=50) | st.integers(min_value=0, max_value=400)
moments = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
)
lingering_items = st.builds(
    LingeringItem,
    id=st.integers(1, 50),
    type=st.sampled_from(["feeling", "thought", "desc", "plan", "pin", "pattern", "secret", "x"]),
    content=texts,
    subject=texts,
    score=st.floats(allow_nan=True) | st.floats(0, 1),
    due=st.none() | moments,
)
summary_items = st.builds(
    SummaryItem,
    id=st.integers(1, 50),
    level=st.sampled_from(["L0", "L1", "L2"]),
    first_event_id=st.integers(1, 100),
    last_event_id=st.integers(1, 100),
    content=texts,
)
recalled_items = st.builds(
    RecalledItem,
    key=texts,
    tier=st.sampled_from(["inventory", "recognition", "ambient", "missing"]),
    text=texts,
)
conversation_lines = st.lists(
    st.tuples(
        st.integers(0, 2),
        st.sampled_from(["user", "say", "do", "narrate"]),
        texts,
        st.sampled_from(["luna", "claude", "", "#x"]),
    ),
    max_size=25,
).map(
    lambda rows: [
        ConversationLine(index + step, NOW, actor, pool, text)
        for index, (step, pool, text, actor) in enumerate(rows)
    ]
)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(
    lingering=st.lists(lingering_items, max_size=8),
    summaries=st.lists(summary_items, max_size=5),
    recalled=st.lists(recalled_items, max_size=5),
    conversation=conversation_lines,
    budgets=st.builds(
        Budgets,
        working_memory=budget,
        recall=budget,
        summaries=budget,
        pool_user=budget,
        pool_say=budget,
        pool_do=budget,
        pool_flex=budget,
        chars_per_token=st.floats(min_value=1.5, max_value=8.0),
    ),
    now=moments,
    last=st.none() | moments,
    message=texts,
    image=st.none() | texts,
)
def test_it_keeps_every_section_within_its_budget(
    lingering, summaries, recalled, conversation, budgets, now, last, message, image
):
    assembly = assemble(
        wake="wake",
        image_text=image,
        ambient="ambient",
        lingering=lingering,
        summaries=summaries,
        recalled=recalled,
        conversation=conversation,
        now=now,
        last_message_at=last,
        message=message,
        actor="luna",
        budgets=budgets,
    )
    counts = assembly.token_counts
    assert counts["lingering"] <= budgets.working_memory
    assert counts["summaries"] <= budgets.summaries
    assert counts["recalled"] <= budgets.recall
    pool_sum = budgets.pool_user + budgets.pool_say + budgets.pool_do + budgets.pool_flex
    assert counts["recent"] <= pool_sum
    for pool, used in assembly.items_included["pool_tokens"].items():
        assert used <= getattr(budgets, f"pool_{pool}")

    assert assembly.user_text == "".join(block["text"] for block in assembly.user)
    assert assembly.system_text == "".join(block["text"] for block in assembly.system)
    assert assembly.user_text.endswith("## Message\nluna:\n" + message)
    assert len(breakpoints(assembly.system + assembly.user)) <= 4
    assert all(block["text"].strip() for block in assembly.system + assembly.user)
    before_message = assembly.user_text[: len(assembly.user_text) - len(message)]
    headings = re.findall(r"^## (.+)$", before_message, re.MULTILINE)
    assert headings == sorted(set(headings), key=HEADINGS.index)
    assert headings[-2:] == ["Now", "Message"]
    for heading in ("Lingering", "Summaries", "Recalled", "Recent"):
        key = heading.lower()
        text = section_text(before_message, heading)
        assert counts[key] == estimate_tokens(text, budgets.chars_per_token)
    included = assembly.items_included
    assert set(included["lingering"]) <= {item.id for item in lingering if item.score >= 0.01}


def test_it_measures_budgets_with_the_calibrated_characters_per_token():
    items = [wm(n, 0.9, content=f"item number {n} with some words") for n in range(1, 40)]

    def kept(chars_per_token):
        budgets = Budgets(working_memory=60, chars_per_token=chars_per_token)
        assembly = build(lingering=items, budgets=budgets)
        text = section_text(assembly.user_text, "Lingering")
        assert estimate_tokens(text, chars_per_token) <= 60
        assert assembly.token_counts["lingering"] == estimate_tokens(text, chars_per_token)
        return len(assembly.items_included["lingering"])

    assert kept(3.0) < kept(4.0) < kept(6.0)


def test_it_estimates_tokens_from_characters_rounding_up():
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens("abcde", 2.5) == 2
    assert estimate_tokens("abcdef", 2.5) == 3


def test_it_moves_the_calibration_a_fifth_of_the_way_and_ignores_nonsense():
    from silentstar.tokens import chars_per_token_calibrated

    assert chars_per_token_calibrated(previous=4.0, characters=3000, tokens=1000) == pytest.approx(
        3.8
    )
    assert chars_per_token_calibrated(previous=4.0, characters=3000, tokens=0) == 4.0
    assert chars_per_token_calibrated(previous=4.0, characters=30, tokens=1000) == 4.0
    assert chars_per_token_calibrated(previous=4.0, characters=90_000, tokens=1000) == 4.0


@settings(max_examples=150)
@given(
    conversation=conversation_lines,
    pools=st.tuples(*[st.integers(0, 120)] * 4),
    chars_per_token=st.floats(min_value=1.5, max_value=8.0),
)
def test_recent_is_one_window_ending_with_the_newest_line(conversation, pools, chars_per_token):
    # Events in the log's order: an event's lines are adjacent, ids grow, and a message of the
    # person is one line.
    starts = [
        n == 0
        or c.event_id != conversation[n - 1].event_id
        or "user" in (c.pool, conversation[n - 1].pool)
        for n, c in enumerate(conversation)
    ]
    conversation = [
        ConversationLine(sum(starts[: n + 1]), c.ts, c.actor, c.pool, c.text)
        for n, c in enumerate(conversation)
    ]
    budgets = Budgets(
        pool_user=pools[0],
        pool_say=pools[1],
        pool_do=pools[2],
        pool_flex=pools[3],
        chars_per_token=chars_per_token,
    )
    included = build(conversation=conversation, budgets=budgets).items_included
    shown = {i for ids in included["recent"].values() for i in ids}
    window = recent_window(conversation, budgets)
    assert {**window._asdict(), "held_from": None, "moved": False} == included["recent_window"]
    if not shown:
        assert window.first_event is None
        return
    # Every line from the oldest shown one to the newest is shown: one contiguous stretch.
    lines_shown = [
        n for n, c in enumerate(conversation) if c.event_id in included["recent"][c.pool]
    ]
    assert lines_shown == list(range(lines_shown[0], len(conversation)))
    # The window starts at an event shown, and every event after it is shown; None only when
    # the newest event alone is shown, and only in part.
    if window.first_event is None:
        assert len(shown) == 1
    else:
        assert window.first_event in shown
        assert {c.event_id for c in conversation if c.event_id >= window.first_event} <= shown


# --- no hole: Recent, the summaries behind it and the not-summarised line ---------------------


@st.composite
def lived_conversations(draw):
    """Turns of the person's messages (1 to 600 characters) and the companion's replies (one or
    two lines of say and do), with a Mirror run after some of them summarising every turn so
    far into an L0 and merging as the Mirror merges; each summary's text of a random length."""
    turns = draw(
        st.lists(
            st.tuples(
                st.integers(1, 600),
                st.lists(
                    st.tuples(st.sampled_from(["say", "do"]), st.integers(1, 300)), max_size=2
                ),
                st.booleans(),
            ),
            min_size=1,
            max_size=40,
        )
    )
    sizes = draw(st.lists(st.integers(1, 900), min_size=1, max_size=6))
    return turns, sizes


def mirror_after(spans: list, summarised_to: int, newest: int, sizes: list[int]) -> list:
    """The summaries after a Mirror run that reflects events up to ``newest``."""
    from mirror.merge import NEXT_LEVEL, Span, merges_due

    spans = list(spans)
    if newest > summarised_to:
        spans.append(Span(len(spans) + 1, "L0", summarised_to + 1, newest))
    for level in ("L0", "L1"):
        while groups := merges_due(spans, level):
            group = groups[0]
            upper = NEXT_LEVEL[level]
            first, last = group[0].first_event_id, group[-1].last_event_id
            spans.append(Span(len(spans) + 1, upper, first, last))
    return [s._replace(tokens=sizes[s.id % len(sizes)]) for s in spans]


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(
    lived=lived_conversations(),
    pools=st.tuples(*[st.integers(30, 400)] * 4),
    summaries_budget=st.integers(40, 600),
)
def test_no_message_of_the_person_is_in_neither_recent_nor_a_summary(
    lived, pools, summaries_budget
):
    turns, sizes = lived
    budgets = Budgets(
        summaries=summaries_budget,
        pool_user=pools[0],
        pool_say=pools[1],
        pool_do=pools[2],
        pool_flex=pools[3],
    )
    conversation: list[ConversationLine] = []
    spans: list = []
    summarised_to = 0
    next_id = 1
    for message_chars, reply_lines, mirror_runs in turns:
        # This turn: the context for the person's new message, then their message and the reply
        # join the conversation.
        message_id = next_id
        window_first = recent_window(conversation, budgets).first_event or message_id
        log_first = 1 if not any(s.first_event_id < window_first for s in spans) else None
        chosen, hole = summaries_behind(
            spans, window_first=window_first, log_first=log_first, budgets=budgets
        )
        content = {s.id: "w " * (2 * sizes[s.id % len(sizes)]) for s in chosen}
        assembly = build(
            conversation=conversation,
            summaries=[
                SummaryItem(s.id, s.level, s.first_event_id, s.last_event_id, content[s.id])
                for s in chosen
            ],
            unsummarised=hole,
            budgets=budgets,
        )
        included = assembly.items_included
        by_id = {s.id: s for s in spans}
        ranges = [(by_id[i].first_event_id, by_id[i].last_event_id) for i in included["summaries"]]
        if included["unsummarised"]:
            ranges.append(tuple(included["unsummarised"]))
        in_recent = set(included["recent"]["user"])
        reach = min([first for first, _ in ranges] + list(in_recent), default=message_id)
        persons = sorted({c.event_id for c in conversation if c.pool == "user"})
        for person in persons:
            if person >= reach:
                assert person in in_recent or any(a <= person <= b for a, b in ranges), person
        # The newest summary behind the window is shown (cut, if it must be).
        if chosen and budgets.summaries >= 100:
            assert chosen[0].id in included["summaries"]
        counts = assembly.token_counts
        assert counts["summaries"] <= budgets.summaries
        assert counts["recent"] <= sum(pools)

        conversation.append(line(message_id, "user", "m" * message_chars))
        next_id += 1
        if reply_lines:
            conversation += [line(next_id, pool, "r" * chars) for pool, chars in reply_lines]
            next_id += 1
        if mirror_runs:
            spans = mirror_after(spans, summarised_to, next_id - 1, sizes)
            summarised_to = next_id - 1


# --- what was left out, and why --------------------------------------------------------------


def test_it_names_each_item_left_out_with_its_reason_rank_and_tokens():
    assembly = build(
        lingering=[
            wm(1, 0.9, "a" * 30),
            wm(2, 0.005, "faded away"),
            wm(3, 0.8, "b" * 45),
            wm(4, 0.7, "c"),
        ],
        summaries=[
            SummaryItem(7, "L0", 1, 20, "x" * 40),
            SummaryItem(8, "L0", 21, 40, "y" * 40),
        ],
        recalled=[RecalledItem("elf", "ambient", "e"), RecalledItem("fairy", "ambient", "f" * 30)],
        budgets=Budgets(working_memory=20, summaries=25, recall=16),
    )
    included = assembly.items_included
    assert included["lingering"] == [1, 4]
    assert included["lingering_scores"] == {1: 0.9, 4: 0.7}
    left = included["left_out"]
    faded, cut = left["lingering"]
    assert faded == {"id": 2, "score": 0.005, "reason": "faded"}
    assert cut["id"] == 3 and cut["reason"] == "budget" and cut["rank"] == 2
    assert cut["tokens"] > cut["room"]  # it needed more than was left when its turn came
    assert included["summaries"] == [8]
    assert left["summaries"] == [{"id": 7, "reason": "budget", "rank": 2}]
    assert included["recalled"] == ["elf"]
    assert [(r["key"], r["reason"], r["rank"]) for r in left["recalled"]] == [
        ("fairy", "budget", 2)
    ]


def test_beyond_the_nearest_misses_items_cut_by_the_budget_are_listed_by_id_alone():
    items = [wm(n, 1 - n / 1000, f"thing number {n}") for n in range(1, 101)]
    assembly = build(lingering=items, budgets=Budgets(working_memory=40))
    included = assembly.items_included
    near, further = included["left_out"]["lingering"], included["left_out"]["lingering_further"]
    assert len(near) == NEAR_MISSES
    assert [item["rank"] for item in near] == sorted(item["rank"] for item in near)
    assert set(included["lingering"]) | {i["id"] for i in near} | set(further) == set(range(1, 101))
    assert not set(further) & ({i["id"] for i in near} | set(included["lingering"]))
    assert included["dropped"]["lingering"] == len(near) + len(further)
