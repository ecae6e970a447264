"""Stored replies, compressed: each critic's first reply of a run is the dictionary its later
replies are compressed against (zstd, raw-content dictionary).

A vendor's replies to one critic repeat themselves: the same envelope (id, object, model,
usage...) around a short verdict. Against the critic's first reply a 525-byte chat completion
compresses to about 110 bytes in about 6 us (zstd on a plain reply alone: 370). The reply is
evidence, so it comes back byte for byte: `unpack` is the only way out, and every reader of
`calls.raw_response` goes through it.

Why zstandard: a well-kept binding of the reference library with raw-content dictionaries,
which zlib's preset dictionaries match in size but at about four times the CPU per reply.
"""

from __future__ import annotations

import sqlite3
import threading
import weakref
from collections.abc import Iterable
from typing import Any

import sqlite_utils
import zstandard

from judging.verdicts import Verdict

_LEVEL = 3  # zstd's default: level 9 saves 2 bytes a reply here at four times the time
# A reply shorter than this saves a few bytes at best (a frame header is 6): kept as text.
_WORTH_PACKING = 64
_local = threading.local()


class RunPacker:
    """One run's dictionaries on one connection: critic -> (dictionary id, compressor)."""

    def __init__(self, conn: sqlite3.Connection, run_id: int) -> None:
        self.run_id = run_id
        self._compressors: dict[str, tuple[int, zstandard.ZstdCompressor]] = {}
        for row in conn.execute(
                "SELECT critic, id, content FROM reply_dictionaries WHERE run_id = ?", [run_id]):
            self._add(row[0], row[1], row[2])

    def _add(self, critic: str, dict_id: int, content: bytes) -> None:
        dictionary = zstandard.ZstdCompressionDict(content,
                                                   dict_type=zstandard.DICT_TYPE_RAWCONTENT)
        # No dictionary id in the frame (a raw-content dictionary has none): the row names it.
        compressor = zstandard.ZstdCompressor(level=_LEVEL, dict_data=dictionary,
                                              write_dict_id=False, write_checksum=False)
        self._compressors[critic] = (dict_id, compressor)

    def learn(self, conn: sqlite3.Connection, verdicts: Iterable[Verdict]) -> None:
        """Make a critic's first reply its dictionary, committed on its own before the rows
        that use it (a dictionary no row uses is harmless; a row without its dictionary would
        be unreadable). Another process may have stored one first: the stored one wins."""
        firsts: dict[str, str] = {}
        for v in verdicts:
            if (v.critic not in self._compressors and v.critic not in firsts
                    and isinstance(v.raw_response, str) and v.raw_response):
                firsts[v.critic] = v.raw_response
        if not firsts:
            return
        with conn:
            conn.executemany(
                "INSERT OR IGNORE INTO reply_dictionaries (run_id, critic, content)"
                " VALUES (?, ?, ?)",
                [(self.run_id, critic, text.encode()) for critic, text in firsts.items()])
        for critic in firsts:
            row = conn.execute("SELECT id, content FROM reply_dictionaries"
                               " WHERE run_id = ? AND critic = ?", [self.run_id, critic]).fetchone()
            self._add(critic, row[0], row[1])

    def pack(self, critic: str, text: str | None) -> tuple[Any, int | None]:
        """(the value to store, its dictionary id); text as it is when it would not shrink."""
        found = self._compressors.get(critic)
        if found is None or not text or len(text) < _WORTH_PACKING:
            return text, None
        data = text.encode()
        packed = found[1].compress(data)
        if len(packed) >= len(data):
            return text, None
        return packed, found[0]


# One packer per connection and run; a connection belongs to one thread (storage.db).
_packers: weakref.WeakKeyDictionary[sqlite_utils.Database, dict[int, RunPacker]] = (
    weakref.WeakKeyDictionary())


def packer_for(db: sqlite_utils.Database, run_id: int) -> RunPacker | None:
    """The run's packer on this connection; None inside a caller's transaction (a dictionary
    must be committed before the rows that use it, so such a batch is stored uncompressed)."""
    if db.conn.in_transaction:
        return None
    runs = _packers.setdefault(db, {})
    packer = runs.get(run_id)
    if packer is None:
        packer = runs[run_id] = RunPacker(db.conn, run_id)
    return packer


def unpack(value: Any, dictionary: bytes | None) -> str | None:
    """A stored reply as the text that was received (`dictionary`: the row's dictionary
    content, None for a reply stored as text)."""
    if value is None or isinstance(value, str):
        return value
    if dictionary is None:  # bytes without a dictionary: never written so, but never guessed
        return bytes(value).decode("utf-8", "replace")
    decompressors: dict[bytes, zstandard.ZstdDecompressor] = getattr(_local, "d", None) or {}
    _local.d = decompressors
    decompressor = decompressors.get(dictionary)
    if decompressor is None:
        if len(decompressors) > 256:  # one per critic and run read in this thread
            decompressors.clear()
        decompressor = decompressors[dictionary] = zstandard.ZstdDecompressor(
            dict_data=zstandard.ZstdCompressionDict(dictionary,
                                                    dict_type=zstandard.DICT_TYPE_RAWCONTENT))
    return decompressor.decompress(bytes(value)).decode()
