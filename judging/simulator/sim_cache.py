"""The simulator's prompt caches: what a vendor reports as cached input, and when.

OpenAI caches automatically (https://platform.openai.com/docs/guides/prompt-caching): a prompt
of at least 1024 tokens whose beginning was seen before has that beginning served from cache,
counted in 128-token steps as `usage.prompt_tokens_details.cached_tokens`; `prompt_tokens`
still includes them.

Anthropic caches what the request marks (https://docs.claude.com/en/docs/build-with-claude/
prompt-caching): each `cache_control` breakpoint closes a prefix (system, then messages up to
the marked block). A prefix seen before is read from cache (`cache_read_input_tokens`), the
longest new one is written (`cache_creation_input_tokens`), and `input_tokens` counts only what
follows the last breakpoint. Prefixes shorter than the model's minimum (1024 tokens for Opus
and Sonnet, 2048 for Haiku) are not cached at all.

Tokens are the simulator's estimate, a quarter of the characters, rounded up.
"""

from __future__ import annotations

import hashlib
import math
import threading

__all__ = ["PromptCache", "anthropic_minimum"]

OPENAI_MINIMUM = 1024
OPENAI_STEP = 128
_CHARS_PER_TOKEN = 4
# Enough for every long prompt of a large test run; beyond it the cache starts afresh, as a
# vendor's cache evicts (entries live minutes, not forever).
_MAX_ENTRIES = 200_000


def anthropic_minimum(model: str) -> int:
    """The shortest prefix Anthropic caches for this model, in tokens."""
    return 2048 if "haiku" in model.lower() else 1024


def _tokens(text: str) -> int:
    return math.ceil(len(text) / _CHARS_PER_TOKEN)


class PromptCache:
    """Prefix hashes seen so far, per model, behind one lock. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: set[bytes] = set()

    def clear(self) -> None:
        with self._lock:
            self._seen.clear()

    def _remember(self, keys: list[bytes]) -> None:
        if len(self._seen) + len(keys) > _MAX_ENTRIES:
            self._seen.clear()
        self._seen.update(keys)

    def openai_cached(self, model: str, prompt: str) -> int:
        """Tokens of `prompt` served from cache, and remember its prefixes for next time.

        Args:
            model: the model asked (caches are per model).
            prompt: the prompt's text, in the order the model reads it.

        Returns:
            0, or a multiple of 128 tokens of at least 1024.
        """
        whole = len(prompt) // _CHARS_PER_TOKEN
        if whole < OPENAI_MINIMUM:
            return 0  # the common case, and free: short prompts are never cached
        digest = hashlib.sha256(f"openai\x00{model}\x00".encode())
        keys: list[bytes] = []
        done = 0
        for tokens in range(OPENAI_MINIMUM, whole + 1, OPENAI_STEP):
            end = tokens * _CHARS_PER_TOKEN
            digest.update(prompt[done:end].encode())
            done = end
            keys.append(digest.copy().digest())
        with self._lock:
            hits = [n for n, key in enumerate(keys) if key in self._seen]
            self._remember(keys)
        return OPENAI_MINIMUM + OPENAI_STEP * hits[-1] if hits else 0

    def anthropic_usage(self, model: str, prefixes: list[str]) -> tuple[int, int]:
        """(read, written) tokens for a request whose breakpoints close these prefixes.

        Args:
            model: the model asked.
            prefixes: the text before each `cache_control` breakpoint, shortest first; each
                is a prefix of the next and of the whole prompt.

        Returns:
            Tokens read from cache and tokens written to it (both 0 when nothing is cacheable).
        """
        minimum = anthropic_minimum(model)
        cacheable = [p for p in prefixes if _tokens(p) >= minimum]
        if not cacheable:
            return 0, 0
        keys = [hashlib.sha256(f"anthropic\x00{model}\x00{p}".encode()).digest()
                for p in cacheable]
        with self._lock:
            hits = [n for n, key in enumerate(keys) if key in self._seen]
            self._remember(keys)
        read = _tokens(cacheable[hits[-1]]) if hits else 0
        written = _tokens(cacheable[-1]) - read if not hits or hits[-1] < len(keys) - 1 else 0
        return read, written
