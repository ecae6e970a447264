"""What a panel says about context windows: each model's window, and what a run does with a
prompt that does not fit it (`ContextGuard`). The measuring and the guarding are
`judging.engine.context_guard`'s.

The window of a critic: its own `context_window` when set, else `KNOWN_WINDOWS` by model id
(the vendors' documented windows for the models people pick today), else the vendor's default
(Ollama's server keeps `OLLAMA_DEFAULT_NUM_CTX` tokens unless its `num_ctx` is raised, and says
nothing when it cuts), else unknown: no check.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from judging.known_fields import StrictModel
from judging.panel.critics import Critic

# Model id (a prefix, after any "maker/" part) -> context window in tokens, from the vendors'
# model pages. First match wins: the longer prefixes come first.
KNOWN_WINDOWS: tuple[tuple[str, int], ...] = (
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-5", 400_000),  # gpt-5, 5.1, 5.2 and their mini / nano
    ("o1", 200_000), ("o3", 200_000), ("o4", 200_000),
    ("claude-", 200_000),  # Opus, Sonnet and Haiku 4.x (Sonnet's 1M window is a beta opt-in)
    ("gemini-2.5", 1_048_576), ("gemini-3", 1_048_576),
    ("deepseek-", 128_000),  # deepseek-chat and deepseek-reasoner
)
# Ollama's default num_ctx (2,048 before 0.6.4); a model's own window does not apply until
# the server is told to use it (OLLAMA_CONTEXT_LENGTH or num_ctx).
OLLAMA_DEFAULT_NUM_CTX = 4096


class ContextGuard(StrictModel):
    """What a run does with a prompt over its critic's context window.

    Attributes:
        over_long: "send" (whole, as today: the estimate names it), "skip" (no call; the
            verdict says why) or "window" (the last `window` messages of the item's `context`
            and `thread` fields; skipped if still too long).
        window: how many messages a window keeps.
    """

    over_long: Literal["send", "skip", "window"] = "send"
    window: int = Field(default=8, ge=1, le=1000)


def context_window(critic: Critic) -> int | None:
    """The critic's context window in tokens (see the module docstring); None when unknown."""
    if critic.context_window is not None:
        return critic.context_window
    model = critic.model.lower().rsplit("/", 1)[-1]
    for prefix, window in KNOWN_WINDOWS:
        if model.startswith(prefix):
            return window
    if critic.vendor == "ollama":
        return OLLAMA_DEFAULT_NUM_CTX
    return None
