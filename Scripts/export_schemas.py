#!/usr/bin/env python3
"""Scripts/export-schemas: IMCodec's schemas for every other language, without protobuf-c.

usage: export-schemas DIR [--schemas DIR] [--include DIR] [--no-verify]

Schemas/imcodec/v1/*.proto import "protobuf-c/protobuf-c.proto" for one option,
`[(pb_c_field).string_as_bytes = true]`, which only changes the C code protoc-c writes. Any other
code generator needs that import too (protoc --python_out writes `import protobuf_c...`, which fails
without a protobuf-c install). This script writes the same schemas without it:

  DIR/imcodec/v1/*.proto  each schema with the protobuf-c import removed and every protobuf-c option
                          (pb_c_file, pb_c_msg, pb_c_field) removed from its option list, the list
                          itself when nothing else is left in it; comments and everything else kept
  DIR/buf.yaml            a buf v2 workspace whose one module (DIR) is named buf.build/imcodec/v1
  DIR/README.md           what the folder is and how to generate code from it

.proto files in DIR/imcodec/v1 that Schemas/ no longer has are deleted; nothing else in DIR is.

Then it proves that the wire format did not move (unless --no-verify): protoc compiles Schemas/
(with -I INCLUDE, for protobuf-c.proto) and DIR (with -I DIR alone) to FileDescriptorSets; from the
first it removes the protobuf-c dependency and the options whose extension numbers protobuf-c.proto
declares; then every file must be identical, field by field (names, numbers, types, labels, oneofs,
maps, json names, enum values, reserved ranges, every other option). On any difference it prints
it and exits 1. Exit status: 0 written and identical, 1 a difference or a protobuf-c construct this
script cannot remove, 2 usage or protoc error.

Needs protoc (and protobuf-c.proto under INCLUDE for the check) and the `protobuf` package.
"""

import argparse
import difflib
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE_DIR = os.path.join("imcodec", "v1")
PROTOBUF_C_PROTO = "protobuf-c/protobuf-c.proto"
BUF_MODULE = "buf.build/imcodec/v1"

HEADER = ("// Exported from IMCodec's Schemas/imcodec/v1 by Scripts/export-schemas: protobuf-c's import and\n"
          "// options are left out; the wire format and the JSON names are the same as IMCodec's.\n\n")

BUF_YAML = """\
# IMCodec's wire schemas (package imcodec.v1), written by IMCodec's Scripts/export-schemas.
version: v2
modules:
  - path: .
    name: %s
breaking:
  use:
    - WIRE_JSON
""" % BUF_MODULE

README = """\
# IMCodec schemas (imcodec.v1)

The protobuf schemas of IMCodec's wire format, for any language: `Frame` in
`imcodec/v1/frame.proto` is the unit on the wire. Written by IMCodec's `Scripts/export-schemas` from
its `Schemas/imcodec/v1`, without the protobuf-c import and options that IMCodec's own C code
generator needs; the export checks that both describe the same messages, fields and enums, so the
bytes and the JSON are the same.

Generate code with this folder as the only import path:

```sh
protoc -I . --python_out=OUT imcodec/v1/*.proto     # then: from imcodec.v1 import frame_pb2
protoc -I . --cpp_out=OUT imcodec/v1/*.proto
buf build                                          # buf.yaml: module %s (add a buf.gen.yaml to buf generate)
```

IMCodec's relay carries one `Frame` per WebSocket binary message, or each `Frame` after its length
as a varint over TCP (protobuf's delimited format).
""" % BUF_MODULE


class ExportError(Exception):
    pass


# --- removing protobuf-c from the text of a .proto ---------------------------------------------

_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<word>[A-Za-z0-9_.+-]+)
  | (?P<punct>.)
""", re.VERBOSE | re.DOTALL)

_PB_C_OPTION = re.compile(r"\(\s*\.?pb_c_\w+\s*\)")


def _tokens(text):
    """(kind, text, start, end) for every token but whitespace; comments are tokens of their own."""
    out = []
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        if kind != "space":
            out.append((kind, m.group(), m.start(), m.end()))
    return out


def _is_pb_c_name(code, i):
    """Whether the option name starting at code[i] is `(pb_c_...)` or `(.pb_c_...)`."""
    if i + 2 < len(code) and code[i][1] == "(" and code[i + 2][1] == ")":
        return re.fullmatch(r"\.?pb_c_\w+", code[i + 1][1]) is not None
    return False


def _statement_end(code, i):
    """The index of the `;` that ends the statement starting at code[i] (braces nest)."""
    depth = 0
    for j in range(i, len(code)):
        t = code[j][1]
        if t in "{[(":
            depth += 1
        elif t in "}])":
            depth -= 1
        elif t == ";" and depth == 0:
            return j
    raise ExportError("a statement without its ';' at offset %d" % code[i][2])


_CLOSER = {"[": "]", "{": "}", "(": ")"}


def _matching_bracket(code, i):
    """The index of the `]` that closes the `[` at code[i]; brackets inside must pair up."""
    stack = []
    for j in range(i, len(code)):
        t = code[j][1]
        if code[j][0] != "punct":
            continue
        if t in _CLOSER:
            stack.append(_CLOSER[t])
        elif t in "}])":
            if t != stack.pop():
                break
            if not stack:
                return j
    raise ExportError("an option list without its ']' at offset %d" % code[i][2])


def _whole_lines(text, start, end):
    """Widens [start, end) to whole lines when nothing else shares them (the line end included)."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    if text[line_start:start].strip() or text[end:line_end].strip():
        return start, end
    end = min(line_end + 1, len(text))
    # A blank line left between two blank lines (or the file's start) goes too.
    before_blank = line_start == 0 or text[:line_start].endswith("\n\n")
    rest = text[end:]
    if before_blank and rest.startswith("\n"):
        end += 1
    return line_start, end


def strip_protobuf_c(text):
    """The .proto `text` without protobuf-c's import and options; everything else as it was."""
    code = [t for t in _tokens(text) if t[0] != "comment"]
    edits = []  # (start, end, replacement)
    i = 0
    while i < len(code):
        kind, token, start, _ = code[i]
        if token == "import" and kind == "word":
            j = i + 1
            if j < len(code) and code[j][1] in ("public", "weak"):
                j += 1
            end = _statement_end(code, i)
            if j < len(code) and code[j][0] == "string" and code[j][1][1:-1] == PROTOBUF_C_PROTO:
                edits.append((*_whole_lines(text, start, code[end][3]), ""))
            i = end + 1
            continue
        if token == "option" and kind == "word" and _is_pb_c_name(code, i + 1):
            end = _statement_end(code, i)
            edits.append((*_whole_lines(text, start, code[end][3]), ""))
            i = end + 1
            continue
        if token == "[":
            close = _matching_bracket(code, i)
            entries, entry, depth = [], [], 0
            for t in code[i + 1:close]:
                if t[1] in "{[(":
                    depth += 1
                elif t[1] in "}])":
                    depth -= 1
                if t[1] == "," and depth == 0:
                    entries.append(entry)
                    entry = []
                else:
                    entry.append(t)
            entries.append(entry)
            kept = [e for e in entries if e and not _is_pb_c_name(e, 0)]
            if len(kept) != len([e for e in entries if e]):
                if kept:
                    inner = ", ".join(text[e[0][2]:e[-1][3]] for e in kept)
                    edits.append((start, code[close][3], "[" + inner + "]"))
                else:
                    # The whole list goes, with the whitespace before it.
                    cut = start
                    while cut > 0 and text[cut - 1] in " \t":
                        cut -= 1
                    edits.append((cut, code[close][3], ""))
            i = close + 1
            continue
        i += 1
    out = text
    for start, end, replacement in sorted(edits, reverse=True):
        out = out[:start] + replacement + out[end:]
    left = [t for t in _tokens(out)
            if (t[0] == "word" and "pb_c_" in t[1]) or (t[0] == "string" and t[1][1:-1] == PROTOBUF_C_PROTO)]
    if left:
        raise ExportError("protobuf-c is still named after the export: %r" % (left[0][1],))
    return out


# --- the export -------------------------------------------------------------------------------

def source_protos(schemas):
    folder = os.path.join(schemas, PACKAGE_DIR)
    names = sorted(n for n in os.listdir(folder) if n.endswith(".proto"))
    if not names:
        raise ExportError("no .proto files in %s" % folder)
    return [os.path.join(PACKAGE_DIR, n).replace(os.sep, "/") for n in names]


def export(schemas, out):
    """Writes the exported schemas, buf.yaml and README.md into `out`; returns the .proto paths."""
    protos = source_protos(schemas)
    folder = os.path.join(out, PACKAGE_DIR)
    os.makedirs(folder, exist_ok=True)
    for rel in protos:
        with open(os.path.join(schemas, rel), encoding="utf-8") as f:
            text = f.read()
        with open(os.path.join(out, rel), "w", encoding="utf-8") as f:
            f.write(HEADER + strip_protobuf_c(text))
    wanted = {os.path.basename(p) for p in protos}
    for name in os.listdir(folder):
        if name.endswith(".proto") and name not in wanted:
            os.remove(os.path.join(folder, name))
    with open(os.path.join(out, "buf.yaml"), "w", encoding="utf-8") as f:
        f.write(BUF_YAML)
    with open(os.path.join(out, "README.md"), "w", encoding="utf-8") as f:
        f.write(README)
    return protos


# --- the proof: the same descriptors ----------------------------------------------------------

def descriptor_set(includes, protos, include_imports=False):
    """protoc's FileDescriptorSet of `protos` (paths relative to the first include)."""
    from google.protobuf import descriptor_pb2

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "set.pb")
        cmd = ["protoc", "--descriptor_set_out=" + out]
        if include_imports:
            cmd.append("--include_imports")
        for inc in includes:
            cmd += ["-I", inc]
        made = subprocess.run(cmd + protos, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True)
        if made.returncode != 0:
            raise ExportError("protoc failed: %s\n%s" % (" ".join(cmd + protos), made.stderr.strip()))
        with open(out, "rb") as f:
            return descriptor_pb2.FileDescriptorSet.FromString(f.read())


def _varint(data, i):
    value, shift = 0, 0
    while True:
        if i >= len(data):
            raise ExportError("a truncated varint in an options message")
        b = data[i]
        value |= (b & 0x7F) << shift
        i += 1
        shift += 7
        if not b & 0x80:
            return value, i


def drop_fields(data, numbers):
    """The wire bytes `data` of a message without its top-level fields numbered in `numbers`."""
    out = bytearray()
    i = 0
    while i < len(data):
        start = i
        key, i = _varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            _, i = _varint(data, i)
        elif wire == 1:
            i += 8
        elif wire == 2:
            length, i = _varint(data, i)
            i += length
        elif wire == 5:
            i += 4
        elif wire == 3:  # a group: skip to its end tag
            depth = 1
            while depth:
                inner, i = _varint(data, i)
                w = inner & 7
                if w == 0:
                    _, i = _varint(data, i)
                elif w == 1:
                    i += 8
                elif w == 2:
                    length, i = _varint(data, i)
                    i += length
                elif w == 5:
                    i += 4
                elif w == 3:
                    depth += 1
                elif w == 4:
                    depth -= 1
        else:
            raise ExportError("wire type %d in an options message" % wire)
        if i > len(data):
            raise ExportError("a truncated options message")
        if number not in numbers:
            out += data[start:i]
    return bytes(out)


def protobuf_c_extensions(fds):
    """{extendee full name: {field numbers}} that protobuf-c.proto declares (from a set with imports)."""
    found = {}
    for f in fds.file:
        if f.name == PROTOBUF_C_PROTO:
            for ext in f.extension:
                found.setdefault(ext.extendee.lstrip("."), set()).add(ext.number)
    return found


def _strip_options(message, extensions):
    """Removes, in place and recursively, the protobuf-c extensions from every `options` field."""
    for field, value in message.ListFields():
        if field.message_type is None:
            continue
        values = value if field.label == field.LABEL_REPEATED else [value]
        for v in values:
            if field.name == "options":
                numbers = extensions.get(v.DESCRIPTOR.full_name, set())
                if numbers:
                    stripped = drop_fields(v.SerializeToString(), numbers)
                    v.Clear()
                    v.MergeFromString(stripped)
                if not v.ByteSize():
                    message.ClearField("options")
            else:
                _strip_options(v, extensions)


def without_protobuf_c(file_proto, extensions):
    """A copy of a FileDescriptorProto without the protobuf-c dependency and options."""
    f = type(file_proto)()
    f.CopyFrom(file_proto)
    f.ClearField("source_code_info")
    deps = list(f.dependency)
    if PROTOBUF_C_PROTO in deps:
        index = deps.index(PROTOBUF_C_PROTO)
        if index in f.public_dependency or index in f.weak_dependency:
            raise ExportError("%s imports protobuf-c.proto public or weak" % f.name)
        del f.dependency[index]
        for field in ("public_dependency", "weak_dependency"):
            renumbered = [d - 1 if d > index else d for d in getattr(f, field)]
            f.ClearField(field)
            getattr(f, field).extend(renumbered)
    _strip_options(f, extensions)
    return f


def compare(schemas, out, include):
    """Differences (lines) between Schemas/ and the export, protobuf-c left out; [] when identical."""
    from google.protobuf import text_format

    protos = source_protos(schemas)
    source = descriptor_set([schemas, include], protos, include_imports=True)
    extensions = protobuf_c_extensions(source)
    if not extensions:
        raise ExportError("%s declares no extensions under %s" % (PROTOBUF_C_PROTO, include))
    exported = descriptor_set([out], source_protos(out))
    left = {f.name: without_protobuf_c(f, extensions) for f in source.file if f.name in protos}
    right = {f.name: f for f in exported.file}
    diffs = []
    for name in sorted(set(left) | set(right)):
        if name not in right:
            diffs.append("%s: missing from the export" % name)
        elif name not in left:
            diffs.append("%s: only in the export" % name)
        else:
            a = text_format.MessageToString(left[name]).splitlines()
            b = text_format.MessageToString(right[name]).splitlines()
            if a != b:
                diffs.append("%s differs (- Schemas/, + export):" % name)
                diffs += list(difflib.unified_diff(a, b, lineterm="", n=2))[2:]
    return diffs


def main(argv=None):
    ap = argparse.ArgumentParser(prog="export-schemas", description=__doc__.split("\n")[0])
    ap.add_argument("dir", help="the folder to write (made if missing)")
    ap.add_argument("--schemas", default=os.path.join(ROOT, "Schemas"),
                    help="the folder holding imcodec/v1/*.proto (default: Schemas/)")
    ap.add_argument("--include", default="/usr/include",
                    help="where protobuf-c/protobuf-c.proto is, for the check (default: /usr/include)")
    ap.add_argument("--no-verify", action="store_true", help="write only; skip the descriptor check")
    args = ap.parse_args(argv)
    try:
        protos = export(args.schemas, args.dir)
        if args.no_verify:
            print("export-schemas: wrote %d schemas, buf.yaml and README.md to %s (not verified)"
                  % (len(protos), args.dir))
            return 0
        diffs = compare(args.schemas, args.dir, args.include)
    except ExportError as error:
        print("export-schemas: %s" % error, file=sys.stderr)
        return 2 if str(error).startswith("protoc failed") else 1
    if diffs:
        print("\n".join(diffs))
        print("export-schemas: the export describes another wire format than Schemas/ (above)", file=sys.stderr)
        return 1
    print("export-schemas: wrote %d schemas, buf.yaml and README.md to %s; their descriptors equal Schemas/' "
          "without protobuf-c" % (len(protos), args.dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
