"""A fragment's tiers against the budget that reads them, and the most a tier may hold.

The recall budget (``settings.BUDGET_RECALL``) is what brings a fragment's tiers into a turn: a
tier past it can reach the companion only in part, and is worth a warning. A tier past
``settings.FRAGMENT_TIER_MAX_TOKENS`` is refused by every write of fragments (``tier_refusal``:
the Anvil's form, drafts, imports), so a pasted inventory of a whole book is said, not saved.
Sizes are the project's one estimate (``silentstar.tokens.estimate_tokens``) at the calibrated
characters per token.
"""

from dataclasses import dataclass

from django.conf import settings

from silentstar.tokens import estimate_tokens


@dataclass(frozen=True)
class TierSize:
    """A tier's estimated size, the recall budget that reads it and the most it may hold."""

    tier: str
    tokens: int
    budget: int
    cap: int

    @property
    def over_cap(self) -> bool:
        return self.tokens > self.cap


def tier_size(tier: str, text: str, *, chars_per_token: float) -> TierSize:
    return TierSize(
        tier=tier,
        tokens=estimate_tokens(text, chars_per_token),
        budget=settings.BUDGET_RECALL,
        cap=settings.FRAGMENT_TIER_MAX_TOKENS,
    )


def tier_refusal(key: str, tier: str, text: str, *, chars_per_token: float) -> str | None:
    """Why ``text`` cannot be the ``tier`` of fragment ``key``, in words, or None."""
    size = tier_size(tier, text, chars_per_token=chars_per_token)
    if not size.over_cap:
        return None
    return (
        f"The {tier} of “{key}” is about {size.tokens:,} tokens, past the {size.cap:,} a tier "
        "may hold (SILENTSTAR_FRAGMENT_TIER_MAX_TOKENS): split it into fragments of their own, "
        f"keeping each tier near the {size.budget:,}-token recall budget that reads it."
    )
