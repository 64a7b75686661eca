"""Hand-rolled protobuf wire writer for the invalid fixtures (Scripts/generate-fixtures).

Google's encoders refuse to write broken bytes, so the invalid inputs are assembled here from
tags, varints and length-delimited pieces. A piece tree can carry one MARK (or a Field with
mark="tag" / mark="length"): `build` returns the bytes and the absolute byte offset
of that mark, which becomes the manifest's `offset`. Offsets are therefore computed from the
structure, never typed in by hand.
"""

import struct

VARINT, I64, LEN, SGROUP, EGROUP, I32 = 0, 1, 2, 3, 4, 5


def varint(n: int) -> bytes:
    """Canonical base-128 varint of a non-negative integer (any size; > 10 bytes if n >= 2^70)."""
    if n < 0:
        n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def tag(field: int, wire_type: int) -> bytes:
    return varint((field << 3) | wire_type)


class Mark:
    """Marks the position where it stands in a piece list."""


MARK = Mark()


class Field:
    """A length-delimited field whose body is a piece list.

    length: the declared length; None means the real length of the body.
    mark:   "tag" or "length" puts the mark on this field's tag / length prefix.
    """

    def __init__(self, number, pieces, length=None, mark=None):
        self.number = number
        self.pieces = pieces
        self.length = length
        self.mark = mark


def build(pieces):
    """Returns (bytes, offset of the mark or None)."""
    out = bytearray()
    mark = None
    for piece in pieces:
        if isinstance(piece, Mark):
            mark = len(out)
        elif isinstance(piece, (bytes, bytearray)):
            out += piece
        elif isinstance(piece, Field):
            body, inner = build(piece.pieces)
            t = tag(piece.number, LEN)
            n = varint(len(body) if piece.length is None else piece.length)
            if piece.mark == "tag":
                mark = len(out)
            elif piece.mark == "length":
                mark = len(out) + len(t)
            if inner is not None:
                mark = len(out) + len(t) + len(n) + inner
            out += t + n + body
        else:
            raise TypeError(f"bad piece {piece!r}")
    return bytes(out), mark


# Small typed helpers (field number first, like the .proto).
def u(field: int, value: int) -> bytes:
    """A varint field (uint32/uint64/int32/int64/bool/enum)."""
    return tag(field, VARINT) + varint(value)


def s(field: int, text) -> Field:
    """A string/bytes field."""
    data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    return Field(field, [data])


def raw_s(field: int, before: bytes, bad: bytes, after: bytes = b"") -> Field:
    """A string field whose bytes are before + bad + after, with the mark on the first bad byte."""
    return Field(field, [before, MARK, bad, after])


def d(field: int, value: float) -> bytes:
    """A double field (fixed64)."""
    return tag(field, I64) + struct.pack("<d", value)


def nesting_bomb(levels: int, max_depth: int):
    """Frame(1) > Message(2) > MessageElement(3) > MergerElement(4) > Message(5) > ...

    `levels` nested messages in all, the top-level Frame counting as level 1, built bottom-up in
    O(levels): each level is only the tag and varint length that opens the next, so the bytes are
    headers[2] + headers[3] + ... + headers[levels] + innermost body.
    Returns (bytes, offset of the tag that opens level max_depth + 1, or None).
    """
    # Kind of level k (k >= 2): Message, MessageElement, MergerElement, repeating.
    # The field of a parent that holds the next level: Frame.message 10, Message.elements 20,
    # MessageElement.merger 10, MergerElement.messages 4.
    kinds = ["Message", "MessageElement", "MergerElement"]
    child_field = {"Frame": 10, "Message": 20, "MessageElement": 10, "MergerElement": 4}

    def kind(level):
        return "Frame" if level == 1 else kinds[(level - 2) % 3]

    # The innermost level holds one scalar or string field, never another sub-message.
    body = {
        "Frame": u(1, 1),  # schema_version: 1
        "Message": tag(5, LEN) + varint(9) + b"user_bomb",  # sender_id
        "MessageElement": b"",  # any content would be one more level
        "MergerElement": tag(1, LEN) + varint(4) + b"bomb",  # title
    }[kind(levels)]
    headers = []
    length = len(body)
    for level in range(levels, 1, -1):
        h = tag(child_field[kind(level - 1)], LEN) + varint(length)
        headers.append(h)
        length += len(h)
    headers.reverse()  # headers[i] opens level i + 2
    offset = None
    if levels > max_depth:
        offset = sum(len(h) for h in headers[: max_depth - 1])
    return b"".join(headers) + body, offset
