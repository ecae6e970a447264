"""The cache index's key hash: a leaf both the call store and the migrations use."""

from __future__ import annotations

import hashlib


def cache_hash(key: str | None) -> int | None:
    """The 64-bit hash of a cache key that the cache index holds (the key itself is too long
    to index cheaply; a lookup compares the full key too, so a collision cannot mislead)."""
    if key is None:
        return None
    try:
        return int(key[:15], 16) if len(key) >= 15 else _blake(key)  # sha256 hex: 60 bits
    except ValueError:  # not hex
        return _blake(key)


def _blake(key: str) -> int:
    digest = hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)
