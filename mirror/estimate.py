"""What compressing conversation not yet summarised would cost, before anything is spent.

Said for an import's preview: the Mirror cuts the turns into chunks of
``SILENTSTAR_MIRROR_CHUNK_TURNS`` and sends each through its passes, then merges every three
summaries of a level into one of the next (``mirror.run``, ``mirror.merge``). The estimate counts
those calls with the chat's own text and the prompts in use, at the configured prices
(``settings.MODEL_PRICES``):

- *about*: the two-pass route (clean, summarise), the cleaned transcript as long as the chunk,
  each summary ``SUMMARY_TOKENS`` long;
- *at most*: the three-pass route for every chunk, and every answer as long as
  ``SILENTSTAR_MIRROR_MAX_TOKENS`` allows.

Prompt caching would make both less; it is left out, so neither figure is an undercount.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings

from mirror.merge import GROUP
from mirror.passes import model_for, prompt_current, transcript
from mirror.route import CLEAN, COMPRESS, MERGE, SUMMARISE, Line, TurnEvent, turns_of
from silentstar.pricing import Tokens, cost, for_model
from silentstar.tokens import estimate_tokens

SUMMARY_TOKENS = 400  # a summary of one chunk, as the summarising prompt asks for short notes


@dataclass
class CompressionEstimate:
    """Calls, tokens and dollars of compressing ``turns`` turns."""

    turns: int
    chunks: int = 0
    merges: int = 0
    about: dict[str, Tokens] = field(default_factory=dict)  # model → tokens
    most: dict[str, Tokens] = field(default_factory=dict)

    @property
    def calls(self) -> int:
        """The calls of the estimate *about*: two passes a chunk, and the merges."""
        return self.chunks * 2 + self.merges

    @property
    def calls_most(self) -> int:
        """The calls of the estimate *at most*: three passes a chunk, and the merges."""
        return self.chunks * 3 + self.merges

    @property
    def unpriced(self) -> list[str]:
        """The models of the passes without a configured price."""
        return sorted(m for m in self.most if for_model(settings.MODEL_PRICES, m) is None)

    def dollars(self, tokens: dict[str, Tokens]) -> float:
        return sum(
            cost(price, spent)
            for model, spent in tokens.items()
            if (price := for_model(settings.MODEL_PRICES, model)) is not None
        )

    @property
    def cost_about(self) -> float:
        return self.dollars(self.about)

    @property
    def cost_most(self) -> float:
        return self.dollars(self.most)

    @property
    def tokens_about(self) -> int:
        return sum(t.input_tokens + t.output_tokens for t in self.about.values())


def turn_transcripts(messages: Iterable[tuple[datetime, str, bool, str]]) -> list[str]:
    """Messages not in the log yet (``(when, speaker, said by the companion, words)``, oldest
    first) as the Mirror would read them once they are: its turns, one transcript each."""
    events = [
        # Spoken: what a person writes, and what an import writes in <say> for the companion.
        TurnEvent(0, at, speaker, companion, (Line(0, speaker, "say", words, companion),))
        for at, speaker, companion, words in messages
    ]
    return [transcript([turn]) for turn in turns_of(events)]


def compression_estimate(turn_texts: Sequence[str]) -> CompressionEstimate:
    """The estimate for turns given as their transcripts, oldest first."""
    size = settings.MIRROR_CHUNK_TURNS
    cap = settings.MIRROR_MAX_TOKENS
    turns = [estimate_tokens(text) for text in turn_texts]
    estimate = CompressionEstimate(turns=len(turns))
    if not turns:
        return estimate
    system = {
        role: estimate_tokens(prompt_current(role)) for role in (CLEAN, COMPRESS, SUMMARISE, MERGE)
    }

    def spend(table: dict[str, Tokens], role: str, sent: int, answered: int) -> None:
        tokens = table.setdefault(model_for(role), Tokens())
        tokens.add(Tokens(input_tokens=system[role] + sent, output_tokens=answered))

    context_turns = settings.MIRROR_CONTEXT_TURNS
    for start in range(0, len(turns), size):
        chunk = sum(turns[start : start + size])
        context = sum(turns[max(0, start - context_turns) : start])
        previous = SUMMARY_TOKENS if start else 0
        cleaned = min(chunk, cap)
        spend(estimate.about, CLEAN, context + chunk, cleaned)
        spend(estimate.about, SUMMARISE, previous + context + cleaned, SUMMARY_TOKENS)
        spend(estimate.most, CLEAN, context + chunk, cap)
        spend(estimate.most, COMPRESS, cap, cap)
        spend(estimate.most, SUMMARISE, cap + context + cap * 2, cap)
        estimate.chunks += 1
    level = estimate.chunks
    while level >= GROUP:
        level //= GROUP
        estimate.merges += level
    for _ in range(estimate.merges):
        spend(estimate.about, MERGE, SUMMARY_TOKENS * (GROUP + 1), SUMMARY_TOKENS)
        spend(estimate.most, MERGE, cap * (GROUP + 1), cap)
    return estimate
