"""A local model server in Claude's place (``settings.LOCAL_SERVER``), through the real SDK against
the fake Messages API at its own base URL, with the models a local server names: a turn, a
Mirror run and a Compass consultation, each in the ledger at no price."""

import json
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from bench.fakeapi import FakeError, FakeReply
from compass.answer import answer_render
from compass.models import Consultation
from compass.services import consultation_run
from events.models import Turn
from gem.state import CHARS_PER_TOKEN, state_get, state_set
from heart.models import ContextSnapshot
from heart.services import turn_submit
from heart.tasks import run_turns_task
from ledger.costs import costs_over
from ledger.models import ModelCall
from mirror.models import Summary
from mirror.run import mirror_run
from silentstar.claude import ClaudeError, complete
from tests.conftest import LOCAL_MODELS
from tests.mirror.conftest import CLEAN_MODEL, COMPRESS_MODEL, SUMMARISE_MODEL, Log, answer

pytestmark = pytest.mark.django_db(databases="__all__")

SYSTEM = [
    {"type": "text", "text": "You are the companion.", "cache_control": {"type": "ephemeral"}}
]
MESSAGES = [{"role": "user", "content": "<luna><say>hello</say></luna>"}]
NOW = datetime(2027, 3, 1, 9, 0, tzinfo=ZoneInfo("UTC"))


def never_offline() -> str:
    raise AssertionError("the offline answer was asked for with a local model server")


def a_turn() -> Turn:
    turn = turn_submit(text="<luna><say>are you there?</say></luna>", actor="luna", enqueue=False)
    assert run_turns_task(turn.pk) == [turn.pk]
    turn.refresh_from_db()
    return turn


def sent_to_the_local_server(api) -> list[dict]:
    """The bodies the fake received, each checked to have come with the placeholder key."""
    for recorded in api.recorded:
        assert recorded.path == "/v1/messages"
        headers = recorded.headers
        assert "local" in headers.get("x-api-key", "") + headers.get("authorization", "")
    return api.requests


def priced_at_nothing(component: str) -> None:
    """The component's calls are in the ledger as local, and cost $0 (not "no price")."""
    rows = ModelCall.objects.filter(component__startswith=component)
    assert rows.exists()
    assert all(row.local and not row.offline for row in rows)
    figures = costs_over(days=1, prices={}).components
    called = [figures[name] for name in figures if name.startswith(component)]
    assert [(f.dollars, f.unpriced_calls, f.dollars_text) for f in called] == [
        (0.0, 0, "$0.0000")
    ] * len(called)


def test_a_turn_is_answered_by_the_local_model_and_costs_nothing(local_model):
    local_model.push(FakeReply("<say>Here, by the lake.</say>"))

    turn = a_turn()

    assert (turn.status, turn.partial_text, turn.model) == (
        "done",
        "Here, by the lake.",
        "qwen3:8b",
    )
    [sent] = sent_to_the_local_server(local_model)
    assert sent["model"] == LOCAL_MODELS["HEART_MODEL"]
    assert "cache_control" not in json.dumps(sent)
    priced_at_nothing("heart")


def test_the_turn_sends_its_cache_markers_when_the_local_server_takes_them(local_model, settings):
    settings.LOCAL_CACHE_MARKERS = True

    a_turn()

    [sent] = sent_to_the_local_server(local_model)
    assert "cache_control" in json.dumps(sent["system"])


def test_a_mirror_run_calls_the_local_models_and_costs_nothing(local_model, settings):
    settings.MIRROR_CHUNK_TURNS = 20
    settings.MIRROR_CONTEXT_TURNS = 5
    pass_models = {
        "You are the cleaning pass": CLEAN_MODEL,
        "You are the compression pass": COMPRESS_MODEL,
    }

    def each_pass(body: dict) -> FakeReply:
        """The Mirror's fake answers, told apart by the instructions (one model does them all)."""
        instructions = body["system"][0]["text"]
        model = next(
            (name for start, name in pass_models.items() if instructions.startswith(start)),
            SUMMARISE_MODEL,
        )
        return answer({**body, "model": model})

    local_model.responder = each_pass
    Log().turns(25, do_heavy=True)

    assert mirror_run(force=True).status == "done"

    assert Summary.objects.exists()
    sent = sent_to_the_local_server(local_model)
    assert {body["model"] for body in sent} == {LOCAL_MODELS["MIRROR_CLEAN_MODEL"]}
    assert "cache_control" not in json.dumps(sent)
    priced_at_nothing("mirror-")


def test_a_compass_consultation_calls_the_local_model_and_costs_nothing(local_model, settings):
    settings.WEB_SEARCH = True  # Anthropic's own server tool: a local server has none
    plan = {
        "plan": "Walk 20 minutes",
        "due": "2027-03-02T08:00",
        "why": "A start.",
        "hidden": False,
    }
    local_model.push(FakeReply(answer_render("A week of walks.", [plan])))
    consultation = Consultation.objects.create(question="more walks?", asked_by="mono")

    done = consultation_run(consultation_id=consultation.pk, now=NOW)

    assert done.status == "done", done.error
    [sent] = sent_to_the_local_server(local_model)
    assert sent["model"] == LOCAL_MODELS["COMPASS_MODEL"]
    assert "tools" not in sent
    assert "cache_control" not in json.dumps(sent)
    priced_at_nothing("compass")


def test_the_local_models_calibration_leaves_claudes_untouched(local_model):
    state_set(CHARS_PER_TOKEN, 3.0)  # Claude's figure, from turns before the local server

    def counted_twice_as_many_tokens(body: dict) -> FakeReply:
        """A tokenizer that counts a token every two characters of the text sent."""
        texts = [block["text"] for block in body["system"]]
        texts += [block["text"] for block in body["messages"][-1]["content"]]
        return FakeReply("<say>yes</say>", input_tokens=len("".join(texts)) // 2)

    local_model.responder = counted_twice_as_many_tokens

    first = a_turn()
    a_turn()

    local = state_get(f"{CHARS_PER_TOKEN}:{LOCAL_MODELS['HEART_MODEL']}")
    assert 2.0 < local < 3.7  # two turns moved it from four toward two
    assert state_get(CHARS_PER_TOKEN) == 3.0
    snapshot = ContextSnapshot.objects.get(turn=first.pk)
    assert snapshot.inputs["chars_per_token"] == 4.0  # the local model's own, not Claude's


def test_its_errors_name_the_local_server(local_model, settings):
    settings.CLAUDE_MAX_RETRIES = 0
    local_model.push(FakeError(404, "model 'qwen3:8b' not found"))

    with pytest.raises(ClaudeError) as raised:
        complete(component="heart", offline_answer=never_offline, system=SYSTEM, messages=MESSAGES)

    assert str(raised.value) == (
        "The local model server did not find what was asked for (is the model name right?) "
        "(404 not_found_error): model 'qwen3:8b' not found"
    )


def test_without_a_key_or_a_local_server_the_offline_companion_answers(local_model, settings):
    settings.LOCAL_SERVER = False
    settings.COMPANION_OFFLINE = True

    reply = complete(
        component="heart", offline_answer=lambda: "offline", system=SYSTEM, messages=MESSAGES
    )

    assert (reply.offline, reply.local, reply.model) == (True, False, "offline")
    assert local_model.requests == []
