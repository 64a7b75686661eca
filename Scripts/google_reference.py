#!/usr/bin/env python3
"""Google's verdicts on a seeded corpus of inputs, for IMCodec's differential test.

Usage: google_reference.py --out DIR [--seed N] [--frames N] [--pairs N] [--mutations N]
                           [--fixtures DIR] [--schemas DIR] [--include DIR]

Tests/IMCodecTests/DifferentialTests.swift runs this script (python3 from PATH, protobuf==4.21.12
from Scripts/requirements.txt, protoc for the descriptors) and decodes every input with IMCodec.

The corpus (every choice comes from random.Random(seed), so a seed always gives the same inputs):
  random    N frames built with Google's message classes (made at run time from Schemas/ through
            protoc --descriptor_set_out, as generate_fixtures.py does), every field of every message
            filled at random by its descriptor: every payload and element kind, nested mergers,
            maps (with U+0000, empty and prefix keys), unknown enum numbers, edge numbers, NaN,
            -0.0, CJK, emoji, U+0000 in strings; serialized by Google (SerializeToString).
  pair      the encodings of two random frames concatenated (protobuf's merge: scalars of the
            second win, repeated fields append, sub-messages merge, a different oneof member
            replaces).
  mutation  structured mutations of the valid fixtures (Fixtures/valid/*.binpb, the
            NAME.canonical.binpb files included): a field duplicated (sub-messages at any depth,
            oneof members, map entries), a different oneof member appended, fields swapped,
            deleted or inserted (unknown fields of every wire type, groups), a wire type changed,
            a record of a repeated or map field's number with another wire type beside its
            elements, U+0000 or an ill-formed UTF-8 byte inserted into a string, a varint or a length
            prefix made over-long (padded to 2-11 bytes), an edge value, a truncation, flipped bits, inserted bytes, two fixtures concatenated.

For each input it writes Google's verdict. The reference is Google's Python protobuf with its
default implementation (upb in 4.21): `Frame.FromString` accepts or rejects; for accepted inputs
`json_format.MessageToJson` (default options) of the parsed Frame and the canonical bytes, which
come from Google's pure-Python deterministic serializer (`SerializeToString(deterministic=True)`
with PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python, in a child process): upb 4.21 orders map keys
wrongly when one key is a prefix of another, C++ and pure Python order them by bytes.

Two kinds of input go to the pure-Python implementation instead of upb:
- nesting deeper than upb's recursion limit (100 levels below the top-level message): when upb
  rejects such input and its wire shape is otherwise sound, pure Python (no depth limit) decides:
  `google` stays "reject" (upb's verdict), `googleDepthOnly` is true and `json`/`canonical` are what
  Google makes of the input without the limit, so IMCodec's deeper limit can still be checked;
- a map entry holding an unknown field, or a key or value with another wire type: upb 4.21 drops
  the entry (C++ and pure Python keep its key and value) and crashes on some such input, so pure
  Python gives the verdict, the JSON and the canonical bytes (the wire shape is checked first).
Pure-Python protobuf 4.21 drops a proto3 double that is -0.0 when it serializes (C++ and upb keep
it); the script stops if an input that needs pure Python holds one.

It also records facts about the wire shape, which the test uses to classify differences:
`depth` (nesting levels counting the top-level Frame as 1, map entries included), `groups` (wire
types 3/4 skipped as unknown fields), `fields` (the number of fields on the wire),
`duplicateSubmessage` (a singular sub-message field, a oneof member included, occurs twice in one
message) and `nulInMap` (a map key or value holds U+0000).

Output: DIR/cases.json = {"seed", "protobuf", "implementation", "cases": [{"id", "kind", "input"
(base64), "google" ("accept" | "reject"), "json", "canonical" (base64), "googleDepthOnly", "depth",
"groups", "fields", "duplicateSubmessage", "nulInMap", "split" (pairs: the length of the first frame)}]}.
"""

import argparse
import base64
import json
import os
import random
import struct
import subprocess
import sys
import tempfile
import threading

from google.protobuf import descriptor, descriptor_pb2, descriptor_pool, json_format, message_factory
from google.protobuf.message import DecodeError
import google.protobuf

V1_FRAME = "imcodec.v1.Frame"
V1_PROTO = "imcodec/v1/frame.proto"
FD = descriptor.FieldDescriptor
VARINT, I64, LEN, SGROUP, EGROUP, I32 = 0, 1, 2, 3, 4, 5


# --- descriptors and message classes -------------------------------------------------------------

def load_pool(schemas, include, tmp):
    out = os.path.join(tmp, "descriptors.pb")
    subprocess.run(["protoc", "--include_imports", f"--descriptor_set_out={out}", "-I", schemas,
                    "-I", include, V1_PROTO], check=True)
    with open(out, "rb") as f:
        fds = descriptor_pb2.FileDescriptorSet.FromString(f.read())
    pool = descriptor_pool.DescriptorPool()
    for file_proto in fds.file:
        pool.Add(file_proto)
    return pool


def message_class(pool, desc):
    if hasattr(message_factory, "GetMessageClass"):  # protobuf >= 4.22
        return message_factory.GetMessageClass(desc)
    return message_factory.MessageFactory(pool).GetPrototype(desc)


def is_map(field):
    return field.type == FD.TYPE_MESSAGE and field.message_type.GetOptions().map_entry


# --- wire helpers ----------------------------------------------------------------------------------

def varint(n):
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


def tag(number, wire_type):
    return varint((number << 3) | wire_type)


def read_varint(data, pos):
    """(value, new position); raises ValueError on a truncated or over-long varint."""
    value = 0
    for i in range(10):
        if pos >= len(data):
            raise ValueError("truncated varint")
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << (7 * i)
        if not b & 0x80:
            return value & ((1 << 64) - 1), pos
    raise ValueError("over-long varint")


def wire_type_of(field):
    if field.type in (FD.TYPE_STRING, FD.TYPE_BYTES, FD.TYPE_MESSAGE):
        return LEN
    if field.type in (FD.TYPE_DOUBLE, FD.TYPE_FIXED64, FD.TYPE_SFIXED64):
        return I64
    if field.type in (FD.TYPE_FLOAT, FD.TYPE_FIXED32, FD.TYPE_SFIXED32):
        return I32
    return VARINT


class Facts:
    def __init__(self):
        self.depth = 0
        self.groups = False
        self.fields = 0
        self.duplicate_submessage = False
        self.nul_in_map = False
        self.unknown_in_map_entry = False
        self.negative_zero = False


def walk(data, desc, level, facts, end_group=None):
    """Reads `data` as `desc` the way protobuf's parsers do, without limits: records the deepest
    level (the top-level message is 1; map entries count), whether groups were skipped, how many
    fields there are, whether a singular sub-message (a oneof member included) occurs twice in one
    message, whether a map key or value holds U+0000, whether a map entry holds an unknown field (or
    a key or value with another wire type) and whether a double is -0.0. Returns the position after
    the message; raises ValueError where a parser would fail on the wire shape (UTF-8 is not checked
    here)."""
    facts.depth = max(facts.depth, level)
    pos = 0 if end_group is None else end_group[0]
    end = len(data)
    seen = set()
    in_map_entry = desc is not None and desc.GetOptions().map_entry
    while pos < end:
        key, pos = read_varint(data, pos)
        number, wt = key >> 3, key & 7
        if number == 0 or number >= 1 << 29:
            raise ValueError("bad field number")
        facts.fields += 1
        field = desc.fields_by_number.get(number) if desc is not None else None
        if in_map_entry and (field is None or wire_type_of(field) != wt):
            facts.unknown_in_map_entry = True
        if wt == VARINT:
            _, pos = read_varint(data, pos)
        elif wt == I64 and field is not None and field.type == FD.TYPE_DOUBLE:
            facts.negative_zero |= data[pos:pos + 8] == b"\0" * 7 + b"\x80"
            pos += 8
            if pos > end:
                raise ValueError("truncated fixed")
        elif wt == I64 or wt == I32:
            pos += 8 if wt == I64 else 4
            if pos > end:
                raise ValueError("truncated fixed")
        elif wt == LEN:
            n, pos = read_varint(data, pos)
            if n > end - pos:
                raise ValueError("length past end")
            if field is not None and field.type == FD.TYPE_MESSAGE:
                if field.label != FD.LABEL_REPEATED:
                    facts.duplicate_submessage |= number in seen
                    seen.add(number)
                walk(data[pos:pos + n], field.message_type, level + 1, facts)
            elif in_map_entry and field is not None and field.type == FD.TYPE_STRING:
                facts.nul_in_map |= 0 in data[pos:pos + n]
            pos += n
        elif wt == SGROUP:
            facts.groups = True
            pos = walk(data, None, level + 1, facts, end_group=(pos, number))
        elif wt == EGROUP:
            if end_group is None or end_group[1] != number:
                raise ValueError("unmatched end group")
            return pos
        else:
            raise ValueError("bad wire type")
    if end_group is not None:
        raise ValueError("unterminated group")
    return pos


# --- random frames ---------------------------------------------------------------------------------

STRINGS = ["", "a", "ab", "user_10010", "@TGS#2J4SZEAEL", "你好，世界", "🚀🙂👨‍👩‍👧",
           "nul\x00inside",
           "\x00", "mixed ascii é ß 漢字 \U0010FFFF", "long text " * 20, "line\nbreak\t\"quoted\"\\",
           "cli-7f3a9c2e-0001", "https://cdn.example.com/img/1.jpg", "0", "-1"]


class RandomFrames:
    def __init__(self, rng, pool, frame_desc):
        self.rng = rng
        self.pool = pool
        self.frame_desc = frame_desc

    def message_class(self, desc):
        return message_class(self.pool, desc)

    def string(self):
        if self.rng.random() < 0.15:
            return "".join(chr(self.rng.choice([0x41 + self.rng.randrange(26), 0x4E00 + self.rng.randrange(500),
                                                 0x1F600 + self.rng.randrange(50), 0, 0x7F, 0x80, 0x7FF,
                                                 0x800, 0xFFFF, 0x10000]))
                           for _ in range(self.rng.randrange(1, 12)))
        return self.rng.choice(STRINGS)

    def scalar(self, field):
        r, t = self.rng, field.type
        if t == FD.TYPE_STRING:
            return self.string()
        if t == FD.TYPE_BYTES:
            return bytes(r.randrange(256) for _ in range(r.randrange(0, 24)))
        if t == FD.TYPE_BOOL:
            return r.random() < 0.5
        if t == FD.TYPE_ENUM:
            numbers = [v.number for v in field.enum_type.values]
            return r.choice(numbers + [99, -7, 2 ** 31 - 1] if r.random() < 0.15 else numbers)
        if t in (FD.TYPE_DOUBLE, FD.TYPE_FLOAT):
            return r.choice([0.0, -0.0, 1.5, -180.0, 90.0, 1e308, 5e-324, float("inf"), float("-inf"),
                             float("nan"), r.uniform(-1e9, 1e9), 113.943112])
        bits = 32 if t in (FD.TYPE_INT32, FD.TYPE_UINT32, FD.TYPE_SINT32, FD.TYPE_FIXED32,
                           FD.TYPE_SFIXED32) else 64
        signed = t in (FD.TYPE_INT32, FD.TYPE_INT64, FD.TYPE_SINT32, FD.TYPE_SINT64, FD.TYPE_SFIXED32,
                       FD.TYPE_SFIXED64)
        if signed:
            lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
            return r.choice([0, 1, -1, lo, hi, 127, 128, r.randint(lo, hi), r.randint(-1000, 1000)])
        hi = (1 << bits) - 1
        return r.choice([0, 1, 127, 128, 16383, 16384, hi, r.randint(0, hi), r.randint(0, 100000)])

    def fill(self, msg, desc, budget):
        """Sets a random subset of `desc`'s fields. `budget` bounds the nesting below."""
        r = self.rng
        chosen_oneof = {o.name: r.choice(o.fields) for o in desc.oneofs}
        for field in desc.fields:
            if field.containing_oneof is not None:
                if chosen_oneof[field.containing_oneof.name] is not field or r.random() < 0.1:
                    continue
            elif r.random() < 0.35:
                continue
            if is_map(field):
                m = getattr(msg, field.name)
                for _ in range(r.randrange(0, 4)):
                    m[self.string()] = self.string()
            elif field.label == FD.LABEL_REPEATED:
                values = getattr(msg, field.name)
                count = r.randrange(0, 4)
                if field.type == FD.TYPE_MESSAGE:
                    if budget <= 0:
                        continue
                    for _ in range(count):
                        self.fill(values.add(), field.message_type, budget - 1)
                else:
                    for _ in range(count):
                        values.append(self.scalar(field))
            elif field.type == FD.TYPE_MESSAGE:
                if budget <= 0:
                    continue
                sub = getattr(msg, field.name)
                sub.SetInParent()
                self.fill(sub, field.message_type, budget - 1)
            else:
                setattr(msg, field.name, self.scalar(field))

    def frame(self, frame_cls):
        msg = frame_cls()
        self.fill(msg, self.frame_desc, self.rng.choice([2, 4, 6, 8, 10]))
        return msg


# --- mutations of the valid fixtures ---------------------------------------------------------------

class Node:
    """One field on the wire. `raw` is the payload (varint bytes, fixed bytes or LEN contents);
    `kids` the parsed fields of a LEN payload whose field is a message (None otherwise)."""

    __slots__ = ("number", "wt", "raw", "kids", "field")

    def __init__(self, number, wt, raw, kids, field):
        self.number, self.wt, self.raw, self.kids, self.field = number, wt, raw, kids, field

    def copy(self):
        return Node(self.number, self.wt, self.raw,
                    None if self.kids is None else [k.copy() for k in self.kids], self.field)


def parse_tree(data, desc):
    nodes, pos = [], 0
    while pos < len(data):
        start = pos
        key, pos = read_varint(data, pos)
        number, wt = key >> 3, key & 7
        field = desc.fields_by_number.get(number) if desc is not None else None
        if wt == VARINT:
            start = pos
            _, pos = read_varint(data, pos)
            nodes.append(Node(number, wt, data[start:pos], None, field))
        elif wt in (I64, I32):
            n = 8 if wt == I64 else 4
            if pos + n > len(data):
                raise ValueError("truncated")
            nodes.append(Node(number, wt, data[pos:pos + n], None, field))
            pos += n
        elif wt == LEN:
            n, pos = read_varint(data, pos)
            raw = data[pos:pos + n]
            pos += n
            kids = None
            if field is not None and field.type == FD.TYPE_MESSAGE:
                try:
                    kids = parse_tree(raw, field.message_type)
                except ValueError:
                    kids = None
            nodes.append(Node(number, wt, raw, kids, field))
        elif wt == SGROUP:  # kept whole, as raw bytes
            pos = walk(data, None, 1, Facts(), end_group=(pos, number))
            nodes.append(Node(0, None, data[start:pos], None, None))
        else:
            raise ValueError("end group or bad wire type")
    return nodes


def serialize(nodes, target=None, found=None, base=0):
    """The bytes of `nodes`. A node whose wire type is None is written as its raw bytes. If `target`
    is given, the absolute offset of its tag is appended to `found`."""
    out = bytearray()
    for n in nodes:
        if n is target:
            found.append(base + len(out))
        if n.wt is None:
            out += n.raw
            continue
        out += tag(n.number, n.wt)
        if n.wt == LEN:
            if n.kids is not None and target is not None:
                start = base + len(out) + len(varint(len(serialize(n.kids))))
                body = serialize(n.kids, target, found, start)
            elif n.kids is not None:
                body = serialize(n.kids)
            else:
                body = n.raw
            out += varint(len(body)) + body
        else:
            out += n.raw
    return bytes(out)


def sort_map_entries(nodes):
    """Orders the entries of each map field by key bytes, as C++ and pure-Python protobuf do in
    deterministic output (upb 4.21 puts "ab" before "a" and "" last). The entries of one map are
    contiguous in deterministic output."""
    for n in nodes:
        if n.kids is not None:
            sort_map_entries(n.kids)
    i = 0
    while i < len(nodes):
        j = i
        while j < len(nodes) and nodes[j].number == nodes[i].number and nodes[i].field is not None \
                and is_map(nodes[i].field):
            j += 1
        if j > i + 1:
            def key(entry):
                return next((k.raw for k in entry.kids if k.number == 1 and k.wt == LEN), b"")
            nodes[i:j] = sorted(nodes[i:j], key=key)
        i = max(j, i + 1)


def positions(nodes, desc, depth=1, out=None):
    """Every (parent list, index, parent descriptor, depth) in the tree."""
    if out is None:
        out = []
    for i, n in enumerate(nodes):
        out.append((nodes, i, desc, depth))
        if n.kids is not None:
            positions(n.kids, n.field.message_type, depth + 1, out)
    return out


def parents(nodes, desc, depth=1, out=None):
    """Every message in the tree: (field list, descriptor, depth)."""
    if out is None:
        out = [(nodes, desc, depth)]
    for n in nodes:
        if n.kids is not None:
            out.append((n.kids, n.field.message_type, depth + 1))
            parents(n.kids, n.field.message_type, depth + 1, out)
    return out


class Mutator:
    def __init__(self, rng, frame_desc, fixtures, randoms):
        self.rng = rng
        self.frame_desc = frame_desc
        self.fixtures = fixtures  # [(name, bytes)]
        self.randoms = randoms
        self.kinds = [
            ("duplicate_field", self.duplicate_field, 12),
            ("duplicate_submessage", self.duplicate_submessage, 12),
            ("duplicate_partial_submessage", self.duplicate_partial_submessage, 8),
            ("other_oneof_member", self.other_oneof_member, 6),
            ("duplicate_map_entry", self.duplicate_map_entry, 4),
            ("swap_fields", self.swap_fields, 6),
            ("delete_field", self.delete_field, 5),
            ("insert_unknown_field", self.insert_unknown_field, 6),
            ("insert_group", self.insert_group, 2),
            ("change_wire_type", self.change_wire_type, 5),
            ("change_tag_wire_type", self.change_tag_wire_type, 3),
            ("wire_type_beside_repeated", self.wire_type_beside_repeated, 4),
            ("nul_in_string", self.nul_in_string, 8),
            ("bad_utf8_in_string", self.bad_utf8_in_string, 3),
            ("overlong_varint", self.overlong_varint, 3),
            ("overlong_length", self.overlong_length, 3),
            ("edge_value", self.edge_value, 4),
            ("truncate", self.truncate, 4),
            ("flip_bits", self.flip_bits, 5),
            ("insert_bytes", self.insert_bytes, 2),
            ("concatenate_fixtures", self.concatenate_fixtures, 3),
        ]

    def pick_node(self, tree, where=None):
        candidates = [p for p in positions(tree, self.frame_desc) if where is None or where(p[0][p[1]])]
        return self.rng.choice(candidates) if candidates else None

    def duplicate_field(self, tree, data):
        p = self.pick_node(tree)
        if p is None:
            return None
        nodes, i, _, _ = p
        nodes.insert(self.rng.randrange(i + 1, len(nodes) + 1), nodes[i].copy())
        return serialize(tree)

    def duplicate_submessage(self, tree, data):
        p = self.pick_node(tree, lambda n: n.kids is not None and n.field.label != FD.LABEL_REPEATED)
        if p is None:
            return None
        nodes, i, _, _ = p
        copy = nodes[i].copy()
        # The copy keeps a random subset of the fields, some of them with other values.
        copy.kids = [k for k in copy.kids if self.rng.random() < 0.6]
        for k in copy.kids:
            if k.wt == VARINT and self.rng.random() < 0.3:
                k.raw = varint(self.rng.choice([0, 1, 2, 300, 2 ** 32 - 1]))
        nodes.insert(self.rng.randrange(i + 1, len(nodes) + 1), copy)
        return serialize(tree)

    def duplicate_partial_submessage(self, tree, data):
        """A singular sub-message again, holding only one of its fields set to another value."""
        p = self.pick_node(tree, lambda n: n.kids and n.field.label != FD.LABEL_REPEATED)
        if p is None:
            return None
        nodes, i, _, _ = p
        node = nodes[i]
        kid = self.rng.choice(node.kids).copy()
        if kid.wt == VARINT:
            kid.raw = varint(self.rng.choice([0, 7, 2 ** 63]))
        elif kid.wt == LEN and kid.kids is None:
            kid.raw = b"second"
        nodes.insert(self.rng.randrange(i + 1, len(nodes) + 1), Node(node.number, LEN, b"", [kid], node.field))
        return serialize(tree)

    def other_oneof_member(self, tree, data):
        p = self.pick_node(tree, lambda n: n.field is not None and n.field.containing_oneof is not None)
        if p is None:
            return None
        nodes, i, _, _ = p
        oneof = nodes[i].field.containing_oneof
        other = self.rng.choice([f for f in oneof.fields if f is not nodes[i].field] or [nodes[i].field])
        sub = self.randoms.message_class(other.message_type)()
        self.randoms.fill(sub, other.message_type, 2)
        body = sub.SerializeToString()
        nodes.insert(self.rng.randrange(i + 1, len(nodes) + 1),
                     Node(other.number, LEN, body, None, other))
        if self.rng.random() < 0.3:  # and the first member once more after it
            nodes.append(nodes[i].copy())
        return serialize(tree)

    def duplicate_map_entry(self, tree, data):
        p = self.pick_node(tree, lambda n: n.field is not None and is_map(n.field) and n.kids is not None)
        if p is None:
            return None
        nodes, i, _, _ = p
        entry = nodes[i].copy()
        for k in entry.kids:
            if k.number == 2 and self.rng.random() < 0.7:
                k.raw = "replaced\x00value".encode() if self.rng.random() < 0.3 else b"replaced"
        if self.rng.random() < 0.3:
            entry.kids.reverse()  # value before key
        nodes.insert(self.rng.randrange(i + 1, len(nodes) + 1), entry)
        return serialize(tree)

    def swap_fields(self, tree, data):
        msgs = [m for m in parents(tree, self.frame_desc) if len(m[0]) >= 2]
        if not msgs:
            return None
        nodes = self.rng.choice(msgs)[0]
        a, b = self.rng.sample(range(len(nodes)), 2)
        nodes[a], nodes[b] = nodes[b], nodes[a]
        return serialize(tree)

    def delete_field(self, tree, data):
        p = self.pick_node(tree)
        if p is None:
            return None
        del p[0][p[1]]
        return serialize(tree)

    def insert_unknown_field(self, tree, data):
        nodes, desc, _ = self.rng.choice(parents(tree, self.frame_desc))
        number = self.rng.choice([n for n in [3, 9, 99, 1000, 2 ** 29 - 1, self.rng.randrange(1, 2 ** 29)]
                                  if desc is None or n not in desc.fields_by_number])
        wt = self.rng.choice([VARINT, I64, LEN, I32])
        raw = {VARINT: varint(self.rng.choice([0, 1, 2 ** 64 - 1])), I64: b"\x01" * 8, I32: b"\xff" * 4,
               LEN: bytes(self.rng.randrange(256) for _ in range(self.rng.randrange(0, 12)))}[wt]
        nodes.insert(self.rng.randrange(0, len(nodes) + 1), Node(number, wt, raw, None, None))
        return serialize(tree)

    def insert_group(self, tree, data):
        """An unknown group (wire types 3 and 4): skipped by Google, sometimes left unterminated."""
        nodes, _, _ = self.rng.choice(parents(tree, self.frame_desc))
        group = tag(99, SGROUP) + tag(1, VARINT) + varint(5) + tag(99, EGROUP)
        if self.rng.random() < 0.3:
            group = group[:-1]
        nodes.insert(self.rng.randrange(0, len(nodes) + 1), Node(0, None, group, None, None))
        return serialize(tree)

    def change_wire_type(self, tree, data):
        """A known field written with another wire type (payload made to fit the new one)."""
        p = self.pick_node(tree, lambda n: n.field is not None)
        if p is None:
            return None
        nodes, i, _, _ = p
        n = nodes[i]
        wt = self.rng.choice([w for w in (VARINT, I64, LEN, I32) if w != n.wt])
        raw = {VARINT: varint(self.rng.choice([0, 1, 300])), I64: b"\x00" * 7 + b"\x40", I32: b"\x01\x00\x00\x00",
               LEN: b"len"}[wt]
        nodes[i] = Node(n.number, wt, raw, None, None)
        return serialize(tree)

    def wire_type_beside_repeated(self, tree, data):
        """A record with a repeated or map field's number and another wire type (an unknown field to
        Google), put before or after one of its elements: the others stay the field's. (The fuzzer
        found IMCodec's JSON printer reading past such a record after a map's entries; JSONTests
        holds that exact shape, which these mutations rarely make.)"""
        def repeated(n):
            return n.field is not None and n.field.label == FD.LABEL_REPEATED
        # Mostly the last known field of its message: a re-encoding puts unknown fields after the
        # known ones, so the record then follows the elements there too.
        last = [p for p in positions(tree, self.frame_desc) if repeated(p[0][p[1]])
                and p[0][p[1]].number == max(m.number for m in p[0] if m.field is not None)]
        maps = [p for p in last if is_map(p[0][p[1]].field)]
        p = (self.rng.choice(maps) if maps and self.rng.random() < 0.5
             else self.rng.choice(last) if last and self.rng.random() < 0.8
             else self.pick_node(tree, repeated))
        if p is None:
            return None
        nodes, i, _, _ = p
        n = nodes[i]
        own = wire_type_of(n.field)
        # Not LEN for a scalar: a length-delimited record of a repeated scalar is a packed run.
        wt = self.rng.choice([w for w in (VARINT, I64, I32) if w != own])
        raw = {VARINT: varint(self.rng.choice([0, 5, 300])), I64: b"\x0a\x00\x01\x0c" * 2,
               I32: b"\x0a\x00\x01\x0c"}[wt]
        nodes.insert(i + self.rng.choice([0, 1]), Node(n.number, wt, raw, None, None))
        return serialize(tree)

    def change_tag_wire_type(self, tree, data):
        """Only the tag's wire type bits change (the low 3 bits of its first byte); the payload stays."""
        p = self.pick_node(tree)
        if p is None:
            return None
        found = []
        out = bytearray(serialize(tree, target=p[0][p[1]], found=found))
        old = out[found[0]] & 7
        out[found[0]] = (out[found[0]] & ~7) | self.rng.choice([w for w in range(8) if w != old])
        return bytes(out)

    def _strings(self, tree):
        def is_string(n):
            return n.wt == LEN and n.kids is None and n.field is not None and n.field.type == FD.TYPE_STRING
        return [p for p in positions(tree, self.frame_desc) if is_string(p[0][p[1]])]

    def nul_in_string(self, tree, data):
        strings = self._strings(tree)
        # Map keys and values are preferred: they are where protobuf-c differs.
        in_maps = [p for p in strings if p[2] is not None and p[2].GetOptions().map_entry]
        pool = in_maps if in_maps and self.rng.random() < 0.6 else strings
        if not pool:
            return None
        nodes, i, _, _ = self.rng.choice(pool)
        n = nodes[i]
        at = self.rng.randrange(0, len(n.raw) + 1)
        n.raw = n.raw[:at] + b"\x00" + n.raw[at:]
        return serialize(tree)

    def bad_utf8_in_string(self, tree, data):
        strings = self._strings(tree)
        if not strings:
            return None
        nodes, i, _, _ = self.rng.choice(strings)
        n = nodes[i]
        at = self.rng.randrange(0, len(n.raw) + 1)
        bad = self.rng.choice([b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe6\x8a", b"\x80"])
        n.raw = n.raw[:at] + bad + n.raw[at:]
        return serialize(tree)

    def overlong_varint(self, tree, data):
        p = self.pick_node(tree, lambda n: n.wt == VARINT)
        if p is None:
            return None
        nodes, i, _, _ = p
        n = nodes[i]
        value, _ = read_varint(n.raw, 0)
        enc = bytearray(varint(value))
        pad = self.rng.randrange(1, 11 - len(enc) + 1) if len(enc) < 10 else 1
        enc[-1] |= 0x80
        enc += b"\x80" * (pad - 1) + b"\x00"
        n.raw = bytes(enc)  # 11 bytes or more is malformed, 10 or fewer is fine
        return serialize(tree)

    def overlong_length(self, tree, data):
        """A length prefix padded to 2-11 bytes (upb reads up to 10; C++ and protobuf-c stop at 5)."""
        p = self.pick_node(tree, lambda n: n.wt == LEN)
        if p is None:
            return None
        nodes, i, _, _ = p
        n = nodes[i]
        body = serialize(n.kids) if n.kids is not None else n.raw
        enc = bytearray(varint(len(body)))
        pad = self.rng.randrange(1, 11 - len(enc) + 1)
        enc[-1] |= 0x80
        enc += b"\x80" * (pad - 1) + b"\x00"
        if len(enc) == 10 and self.rng.random() < 0.5:
            # A tenth byte above 0: its lowest bit is the value's 64th (a length past 2^63, which
            # both refuse), the rest lie past it (upb and Java drop them; Go refuses them).
            enc[-1] = self.rng.choice([0x01, 0x02, 0x7F])
        nodes[i] = Node(n.number, None, tag(n.number, LEN) + bytes(enc) + body, None, None)
        return serialize(tree)

    def edge_value(self, tree, data):
        p = self.pick_node(tree, lambda n: n.wt in (VARINT, I64, I32))
        if p is None:
            return None
        nodes, i, _, _ = p
        n = nodes[i]
        if n.wt == VARINT:
            n.raw = varint(self.rng.choice([0, 1, 2, 2 ** 31, 2 ** 32, 2 ** 32 + 5, 2 ** 63, 2 ** 64 - 1, 2 ** 31 - 1]))
        elif n.wt == I64:
            n.raw = self.rng.choice([struct.pack("<d", float("nan")), b"\x01\x00\x00\x00\x00\x00\xf0\x7f",
                                     struct.pack("<d", -0.0), b"\xff" * 8, struct.pack("<d", 5e-324)])
        else:
            n.raw = self.rng.choice([b"\xff\xff\xff\xff", b"\x00\x00\xc0\x7f"])
        return serialize(tree)

    def truncate(self, tree, data):
        if len(data) < 2:
            return None
        return data[:self.rng.randrange(1, len(data))]

    def flip_bits(self, tree, data):
        if not data:
            return None
        out = bytearray(data)
        for _ in range(self.rng.randrange(1, 4)):
            out[self.rng.randrange(len(out))] ^= 1 << self.rng.randrange(8)
        return bytes(out)

    def insert_bytes(self, tree, data):
        at = self.rng.randrange(len(data) + 1)
        return data[:at] + bytes(self.rng.randrange(256) for _ in range(self.rng.randrange(1, 5))) + data[at:]

    def concatenate_fixtures(self, tree, data):
        return data + self.rng.choice(self.fixtures)[1]

    def mutate(self):
        """One mutation of one fixture: (kind, fixture name, bytes); kinds that do not apply retry."""
        total = sum(w for _, _, w in self.kinds)
        while True:
            name, data = self.rng.choice(self.fixtures)
            pick = self.rng.randrange(total)
            for kind, fn, weight in self.kinds:
                if pick < weight:
                    break
                pick -= weight
            out = fn(parse_tree(data, self.frame_desc), data)
            if out is not None and out != data:
                return kind, name, out


# --- verdicts --------------------------------------------------------------------------------------

def canonical_child(path_in, path_out):
    """Child process (pure-Python protobuf): for each input, Google's deterministic bytes and JSON."""
    from google.protobuf.internal import api_implementation
    if api_implementation.Type() != "python":
        sys.exit("google_reference: --canonical needs PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python")
    args = json.load(open(path_in))
    with tempfile.TemporaryDirectory() as tmp:
        pool = load_pool(args["schemas"], args["include"], tmp)
    frame_cls = message_class(pool, pool.FindMessageTypeByName(V1_FRAME))
    results = []
    for item in args["inputs"]:
        data = base64.b64decode(item)
        try:
            msg = frame_cls.FromString(data)
            results.append({"canonical": base64.b64encode(msg.SerializeToString(deterministic=True)).decode(),
                            "json": json_format.MessageToJson(msg)})
        except Exception as e:  # noqa: BLE001 - any failure is a rejection
            results.append({"error": f"{type(e).__name__}: {e}"[:200]})
    with open(path_out, "w") as f:
        json.dump(results, f)


def run_canonical(inputs, args, tmp):
    """Runs canonical_child on `inputs` (bytes) with a deep stack; returns its results in order."""
    path_in, path_out = os.path.join(tmp, "canonical_in.json"), os.path.join(tmp, "canonical_out.json")
    with open(path_in, "w") as f:
        json.dump({"schemas": args.schemas, "include": args.include,
                   "inputs": [base64.b64encode(b).decode() for b in inputs]}, f)
    env = dict(os.environ, PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION="python", PYTHONDONTWRITEBYTECODE="1")
    subprocess.run([sys.executable, os.path.abspath(__file__), "--canonical", path_in, path_out], env=env,
                   check=True)
    with open(path_out) as f:
        return json.load(f)


def main_with_args(args):
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        pool = load_pool(args.schemas, args.include, tmp)
        frame_desc = pool.FindMessageTypeByName(V1_FRAME)
        frame_cls = message_class(pool, frame_desc)
        randoms = RandomFrames(rng, pool, frame_desc)

        corpus = []  # (kind, bytes, split)
        frames = [randoms.frame(frame_cls).SerializeToString() for _ in range(args.frames)]
        corpus += [("random", f, None) for f in frames]
        for _ in range(args.pairs):
            first, second = rng.choice(frames), rng.choice(frames)
            corpus.append(("pair", first + second, len(first)))
        valid = os.path.join(args.fixtures, "valid")
        fixtures = []
        for name in sorted(n[:-len(".binpb")] for n in os.listdir(valid) if n.endswith(".binpb")):
            with open(os.path.join(valid, name + ".binpb"), "rb") as f:
                fixtures.append((name, f.read()))
        mutator = Mutator(rng, frame_desc, fixtures, randoms)
        for _ in range(args.mutations):
            kind, name, data = mutator.mutate()
            corpus.append((f"mutation:{kind}:{name}", data, None))

        cases, need_python = [], []
        for index, (kind, data, split) in enumerate(corpus):
            facts, shape_ok = Facts(), True
            try:
                walk(data, frame_desc, 1, facts)
            except (ValueError, IndexError):
                shape_ok = False
            case = {"id": index, "kind": kind, "input": base64.b64encode(data).decode(), "google": "reject",
                    "json": None, "canonical": None, "googleDepthOnly": False, "depth": facts.depth,
                    "groups": facts.groups, "fields": facts.fields,
                    "duplicateSubmessage": facts.duplicate_submessage, "nulInMap": facts.nul_in_map,
                    "split": split}
            if facts.unknown_in_map_entry:
                # upb 4.21 drops a map entry that holds an unknown field (or a key or value with
                # another wire type), and crashes on some; C++ and pure Python keep its key and
                # value. Pure Python decides such input when its wire shape is sound.
                if shape_ok:
                    need_python.append(index)
            else:
                try:
                    msg = frame_cls.FromString(data)
                    case["google"] = "accept"
                    case["json"] = json_format.MessageToJson(msg)
                    tree = parse_tree(msg.SerializeToString(deterministic=True), frame_desc)
                    sort_map_entries(tree)
                    case["canonical"] = base64.b64encode(serialize(tree)).decode()
                except DecodeError:
                    # upb's recursion limit: 100 levels below the top-level message.
                    if shape_ok and facts.depth > 101:
                        need_python.append(index)
            if index in need_python[-1:] and facts.negative_zero:
                # Pure-Python protobuf 4.21 drops a proto3 double that is -0.0 (C++ and upb keep
                # it), so it cannot give the canonical bytes of such an input.
                sys.exit(f"google_reference: case {index} ({kind}) needs pure-Python protobuf and holds "
                         f"-0.0; change the seed or the mutation")
            cases.append(case)

        results = run_canonical([corpus[i][1] for i in need_python], args, tmp)
        for index, result in zip(need_python, results):
            case = cases[index]
            if "error" in result:
                continue  # rejected
            if case["depth"] > 101:
                case["googleDepthOnly"] = True  # upb refuses it, for its recursion limit only
            else:
                case["google"] = "accept"
            case["json"] = result["json"]
            case["canonical"] = result["canonical"]

    from google.protobuf.internal import api_implementation
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "cases.json"), "w") as f:
        json.dump({"seed": args.seed, "protobuf": google.protobuf.__version__,
                   "implementation": api_implementation.Type(), "cases": cases}, f)
    accepted = sum(c["google"] == "accept" for c in cases)
    print(f"google_reference: {len(cases)} inputs ({args.frames} random, {args.pairs} pairs, "
          f"{args.mutations} mutations), Google accepts {accepted} (protobuf {google.protobuf.__version__}, "
          f"{api_implementation.Type()})")


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.setrecursionlimit(100_000)
    if len(sys.argv) == 4 and sys.argv[1] == "--canonical":
        threading.stack_size(512 << 20)
        worker = threading.Thread(target=canonical_child, args=(sys.argv[2], sys.argv[3]))
        worker.start()
        worker.join()
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=20261123)
    ap.add_argument("--frames", type=int, default=1000)
    ap.add_argument("--pairs", type=int, default=500)
    ap.add_argument("--mutations", type=int, default=1000)
    ap.add_argument("--fixtures", default=os.path.join(root, "Fixtures"))
    ap.add_argument("--schemas", default=os.path.join(root, "Schemas"))
    ap.add_argument("--include", default="/usr/include")
    args = ap.parse_args()
    args.schemas = os.path.abspath(args.schemas)
    args.fixtures = os.path.abspath(args.fixtures)
    main_with_args(args)


if __name__ == "__main__":
    main()
