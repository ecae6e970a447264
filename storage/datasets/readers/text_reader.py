"""Text files: which encoding the bytes are in, and their lines, one bounded line at a time.

Read as UTF-8 (with or without a byte-order mark), UTF-16/UTF-32 with a byte-order mark, or
Windows-1252 when the bytes are clearly Western European text. Anything else is refused,
never decoded with replacement characters. The whole text is never held as one string: lines
are decoded as they are read, and a line longer than the limit is refused before it is.
"""

from __future__ import annotations

import codecs
import io
import re
from collections.abc import Iterator

from judging.errors import DataError
from storage.datasets.import_limits import Budget, variable_for

_BOMS: tuple[tuple[bytes, str], ...] = (
    # UTF-32 first: its little-endian BOM starts with UTF-16's.
    (b"\xff\xfe\x00\x00", "utf-32"),
    (b"\x00\x00\xfe\xff", "utf-32"),
    (b"\xef\xbb\xbf", "utf-8-sig"),
    (b"\xff\xfe", "utf-16"),
    (b"\xfe\xff", "utf-16"),
)

_CHUNK = 1 << 20  # bytes validated at a time: the decoded text of one chunk is thrown away


def detect_encoding(raw: bytes, name: str) -> str:
    """The encoding of a text file's bytes, checked over the whole file.

    Returns:
        "utf-8", "utf-8-sig", "utf-16", "utf-32" or "cp1252".

    Raises:
        DataError: the bytes are neither UTF-8/16/32 nor clearly Windows-1252, or hold NULs.
    """
    for bom, encoding in _BOMS:
        if raw.startswith(bom):
            bad = _first_undecodable(raw, encoding)
            if bad is not None:
                raise DataError(
                    f"{name} starts with a {encoding.upper()} byte-order mark but byte {bad} "
                    f"is not valid {encoding.upper()}. Save it as UTF-8 and upload again."
                )
            return encoding
    bad = _first_undecodable(raw, "utf-8")
    if bad is not None:
        if _looks_like_cp1252(raw):
            return "cp1252"
        line = raw.count(b"\n", 0, bad) + 1
        raise DataError(
            f"{name} is not UTF-8: byte 0x{raw[bad]:02X} on line {line} cannot be "
            "decoded, and the file is not recognisably Windows-1252 either. Save it as "
            "UTF-8 (in Excel: 'CSV UTF-8') and upload again."
        )
    nul = raw.find(b"\x00")  # in UTF-8 a NUL byte is a NUL character
    if nul >= 0:
        line = raw.count(b"\n", 0, nul) + 1
        raise DataError(
            f"{name} contains NUL bytes (first on line {line}): it is probably UTF-16 "
            "without a byte-order mark, or not a text file. Save it as UTF-8 and upload again."
        )
    return "utf-8"


def _first_undecodable(raw: bytes, encoding: str) -> int | None:
    """The offset of the first byte `encoding` cannot decode, or None: decoded a chunk at a
    time, so validating a 200 MB file never holds its text."""
    decoder = codecs.getincrementaldecoder(encoding)("strict")
    view = memoryview(raw)
    for start in range(0, len(raw), _CHUNK):
        try:
            decoder.decode(view[start : start + _CHUNK], final=start + _CHUNK >= len(raw))
        except UnicodeDecodeError as exc:
            # exc.start counts from the bytes the decoder still held (an unfinished sequence).
            held = len(exc.object) - len(view[start : start + _CHUNK])
            return max(0, min(len(raw) - 1, start - held + exc.start))
    return None


# Windows-1252 is accepted only when the text looks like Western European text. Bytes of
# other encodings (Shift-JIS, GBK, Windows-1251, ...) also decode as Windows-1252, into
# mojibake; three signs catch them. They are matched on the raw bytes (one byte is one
# character in Windows-1252), so the text is never decoded to look:
_CP1252_UNDEFINED = (b"\x81", b"\x8d", b"\x8f", b"\x90", b"\x9d", b"\x00")


def _byte_class(wanted: str) -> bytes:
    """A regex byte class of the Windows-1252 bytes whose character matches `wanted`."""
    members = []
    for byte in range(256):
        try:
            char = bytes([byte]).decode("cp1252")
        except UnicodeDecodeError:
            continue
        if re.fullmatch(wanted, char):
            members.append(re.escape(bytes([byte])))
    return b"[" + b"".join(members) + b"]"


_WORD = _byte_class(r"\w")
#  - four or more non-ASCII characters in a row: Western words put accents between ASCII
#    letters ("Müller", "não"), while CJK and Cyrillic text is made only of high bytes;
_CP1252_LONG_RUN = re.compile(rb"[\x80-\xff]{4,}")
#  - a word of two or more letters with no ASCII letter at all ("да" reads as "äà");
_CP1252_ALIEN_WORD = re.compile(
    b"(?<!" + _WORD + b")" + _byte_class(r"[^\x00-\x7f\W\d_]") + b"{2,}(?!" + _WORD + b")"
)
#  - characters Western text almost never uses but Shift-JIS lead bytes produce constantly
#    (0x82, 0x83, 0x86-0x89, 0x8B, 0x98, 0x9B), and a UTF-16 surrogate encoded as if it were
#    UTF-8 ("í" + two symbols: a broken UTF-8 encoder, never Western text).
_CP1252_UNLIKELY = re.compile(rb"[\x82\x83\x86-\x89\x8b\x98\x9b]|\xed[\xa0-\xbf][\x80-\xbf]")


def _looks_like_cp1252(raw: bytes) -> bool:
    if any(byte in raw for byte in _CP1252_UNDEFINED):
        return False
    return not any(
        sign.search(raw) for sign in (_CP1252_LONG_RUN, _CP1252_ALIEN_WORD, _CP1252_UNLIKELY)
    )


def text_lines(
    raw: bytes, encoding: str, name: str, budget: Budget, *, newline: str
) -> Iterator[str]:
    """The file's lines, decoded one at a time, each with its line ending.

    Args:
        newline: "" splits on \\r, \\n and \\r\\n (what the csv module needs); "\\n" splits on
            \\n only (JSON may hold a bare \\r between tokens).

    Raises:
        DataError: a line is longer than `ImportLimits.max_line_chars`; it is refused after
            reading that many characters, not the whole line.
    """
    cap = budget.limits.max_line_chars
    stream = io.TextIOWrapper(io.BytesIO(raw), encoding=encoding, newline=newline)
    number = 0
    while True:
        line = stream.readline(cap + 2)  # room for the line's own "\r\n"
        if not line:
            return
        number += 1
        if len(line) > cap and len(line.rstrip("\r\n")) > cap:
            raise DataError(
                f"{name}, line {number}: the line is longer than {cap:,} characters (four "
                "times the limit for one value), so it was not read. Break the long text into "
                f"shorter values, or ask the operator to raise {variable_for('max_cell_chars')}."
            )
        if number == 1:
            line = line.lstrip("\ufeff")  # a second byte-order mark, or one after "utf-8"
        yield line
