"""What each pass is sent (``mirror.passes``)."""

from datetime import UTC, datetime

import pytest

from mirror.models import MirrorPrompt
from mirror.passes import model_for, prompt_current, transcript
from mirror.route import Line, TurnEvent, turns_of

pytestmark = pytest.mark.django_db(databases="__all__")
TS = datetime(2026, 3, 2, tzinfo=UTC)


def test_it_writes_the_transcript_with_event_numbers_and_kinds():
    events = [
        TurnEvent(7, TS, "luna", False, (Line(7, "luna", "say", "hi  there", False),)),
        TurnEvent(
            8,
            TS,
            "claude",
            True,
            (Line(8, "claude", "say", "hello", True), Line(8, "claude", "do", "waves", True)),
        ),
        TurnEvent(9, TS, "luna", False, (Line(9, "luna", "do", "sits", False),)),
    ]
    assert transcript(turns_of(events)) == (
        "#7 luna: hi there\n#8 claude (say): hello\n#8 claude (do): waves\n\n#9 luna (do): sits"
    )


def test_it_uses_the_newest_prompt_version_and_ships_defaults():
    assert "## Suggestions" in prompt_current("summarise")  # the shipped default, migrated
    MirrorPrompt.objects.create(kind="clean", content="v2")
    assert prompt_current("clean") == "v2"
    MirrorPrompt.objects.all().delete()
    assert prompt_current("merge").startswith("You are the Mirror")  # from the file


def test_it_has_one_model_setting_per_pass_role(settings):
    settings.MIRROR_CLEAN_MODEL, settings.MIRROR_COMPRESS_MODEL = "a", "b"
    settings.MIRROR_SUMMARISE_MODEL = "c"
    assert [model_for(r) for r in ("clean", "compress", "summarise", "merge")] == list("abcc")


def test_its_default_models_are_the_newest_of_each_tier_the_sdk_lists():
    import typing

    from anthropic.resources.messages.messages import DEPRECATED_MODELS
    from anthropic.types.model_param import ModelParam

    from silentstar import settings as defaults

    listed = typing.get_args(typing.get_args(ModelParam)[0])
    chosen = {
        "haiku": defaults.MIRROR_CLEAN_MODEL,
        "sonnet": defaults.MIRROR_COMPRESS_MODEL,
        "opus": defaults.MIRROR_SUMMARISE_MODEL,
    }
    for tier, model in chosen.items():
        assert model in listed and model not in DEPRECATED_MODELS
        # The SDK lists the newest first.
        assert model == next(name for name in listed if f"-{tier}-" in name)
