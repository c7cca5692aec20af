"""Model tiers: which model of the run's provider suits a kind of work, so an orchestrator
names the work, not a model id. A tier gives a model only where the host can open it (it is
listed by `providers.list-providers`); otherwise the child keeps the run's model."""

from __future__ import annotations

import enum
from typing import Optional


class Tier(enum.IntEnum):
    """How much model a kind of work needs."""

    FAST = 0
    """Fast and cheap: reading, searching, summing up, planning."""
    STRONG = 1
    """Strong: writing and changing code."""
    DEEP = 2
    """The deepest: debugging a failure, judging a change."""


# Each known provider's model of each tier (fast, strong, deep), as the Rust SDK's.
TIERS = {
    "anthropic": ("claude-haiku-4-5", "claude-sonnet-4-5", "claude-opus-4-5"),
    "openai": ("gpt-5-mini", "gpt-5", "gpt-5"),
    "deepseek": ("deepseek-chat", "deepseek-chat", "deepseek-reasoner"),
}


def tier_model(tier: Tier) -> Optional[str]:
    """The current provider's model of `tier`, when it has tiers and the host can open it."""
    from wit_world.imports import providers

    provider = providers.get_current_provider()
    if provider is None or provider not in TIERS:
        return None
    model = TIERS[provider][int(tier)]
    openable = any(p.id == provider and model in p.models for p in providers.list_providers())
    return model if openable else None
