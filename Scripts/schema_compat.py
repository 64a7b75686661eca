#!/usr/bin/env python3
"""Schema compatibility guard: compares Schemas/imcodec/v1 with the committed baseline descriptor set.

Usage: Scripts/schema-compat [--baseline PATH] [--schemas DIR]            check (the default)
       Scripts/schema-compat --update-baseline [--baseline PATH] [--schemas DIR]

The baseline is a FileDescriptorSet written by
    protoc -I. -I/usr/include --include_imports --descriptor_set_out=... imcodec/v1/*.proto
run in the schemas directory (the include paths of Scripts/generate-schemas). The check compiles
the current schemas the same way and compares every message (nested ones too) and enum of package
imcodec.v1. Each break is one line on stdout:
    <file>: <full type name>[.<field or value>]: <what broke>
Exit status: 0 compatible, 1 breaks found (or --update-baseline refused), 2 usage error, protoc
failure or unreadable baseline. What counts as a break: Schemas/baseline/README.md.
"""

import argparse
import glob
import os
import subprocess
import sys
import tempfile

try:
    from google.protobuf import descriptor_pb2
except ImportError:  # pragma: no cover - environment problem
    sys.stderr.write("schema-compat: Python protobuf not found (pip install -r Scripts/requirements.txt)\n")
    sys.exit(2)

PACKAGE = "imcodec.v1"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_SCHEMAS = os.path.join(ROOT, "Schemas")
DEFAULT_BASELINE = os.path.join(ROOT, "Schemas", "baseline", "imcodec-v1.binpb")
MAX_FIELD_NUMBER = 536870911

F = descriptor_pb2.FieldDescriptorProto
TYPE_NAMES = {
    F.TYPE_DOUBLE: "double", F.TYPE_FLOAT: "float", F.TYPE_INT64: "int64", F.TYPE_UINT64: "uint64",
    F.TYPE_INT32: "int32", F.TYPE_FIXED64: "fixed64", F.TYPE_FIXED32: "fixed32", F.TYPE_BOOL: "bool",
    F.TYPE_STRING: "string", F.TYPE_GROUP: "group", F.TYPE_MESSAGE: "message", F.TYPE_BYTES: "bytes",
    F.TYPE_UINT32: "uint32", F.TYPE_ENUM: "enum", F.TYPE_SFIXED32: "sfixed32",
    F.TYPE_SFIXED64: "sfixed64", F.TYPE_SINT32: "sint32", F.TYPE_SINT64: "sint64",
}
# Scalar families whose members read each other's wire bytes (protobuf's "Updating a message
# type" rules), with each member's width in bits. A change inside a family is compatible unless it
# narrows (64 -> 32 bits: values are truncated). bool, enum, string and bytes are families of their
# own here: their JSON form differs from the integers' and from each other's.
FAMILIES = {
    "int32": ("varint", 32), "uint32": ("varint", 32), "int64": ("varint", 64), "uint64": ("varint", 64),
    "sint32": ("zigzag", 32), "sint64": ("zigzag", 64),
    "fixed32": ("i32", 32), "sfixed32": ("i32", 32),
    "fixed64": ("i64", 64), "sfixed64": ("i64", 64),
}


class Usage(Exception):
    """A problem that exits 2: bad arguments, protoc failure, unreadable baseline."""


def compile_schemas(schemas_dir):
    """Returns the FileDescriptorSet bytes protoc makes of schemas_dir/imcodec/v1/*.proto."""
    if not os.path.isdir(os.path.join(schemas_dir, "imcodec", "v1")):
        raise Usage("no imcodec/v1 directory in %s" % schemas_dir)
    protos = sorted(os.path.relpath(p, schemas_dir)
                    for p in glob.glob(os.path.join(schemas_dir, "imcodec", "v1", "*.proto")))
    if not protos:
        raise Usage("no .proto files in %s/imcodec/v1" % schemas_dir)
    with tempfile.TemporaryDirectory(prefix="schema-compat.") as tmp:
        out = os.path.join(tmp, "current.binpb")
        cmd = ["protoc", "-I.", "-I/usr/include", "--include_imports",
               "--descriptor_set_out=" + out] + protos
        try:
            proc = subprocess.run(cmd, cwd=schemas_dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  universal_newlines=True)
        except FileNotFoundError:
            raise Usage("protoc not found (apt: protobuf-compiler; see README: Regenerating)")
        if proc.returncode != 0:
            raise Usage("protoc failed (in %s: %s):\n%s" % (schemas_dir, " ".join(cmd),
                                                             (proc.stderr + proc.stdout).rstrip()))
        with open(out, "rb") as f:
            return f.read()


def parse_set(data, what):
    fds = descriptor_pb2.FileDescriptorSet()
    try:
        fds.ParseFromString(data)
    except Exception as e:  # DecodeError
        raise Usage("%s is not a FileDescriptorSet: %s" % (what, e))
    return fds


class Schema:
    """The messages (map entries excluded) and enums of package imcodec.v1, by full name."""

    def __init__(self, fds):
        self.messages = {}  # full name -> (file name, DescriptorProto)
        self.enums = {}     # full name -> (file name, EnumDescriptorProto)
        self.map_entries = {}  # full name -> DescriptorProto
        for fd in fds.file:
            if fd.package != PACKAGE:
                continue
            for m in fd.message_type:
                self._add_message(fd.name, PACKAGE + "." + m.name, m)
            for e in fd.enum_type:
                self.enums[PACKAGE + "." + e.name] = (fd.name, e)

    def _add_message(self, file_name, full, m):
        if m.options.map_entry:
            self.map_entries[full] = m
            return
        self.messages[full] = (file_name, m)
        for n in m.nested_type:
            self._add_message(file_name, full + "." + n.name, n)
        for e in m.enum_type:
            self.enums[full + "." + e.name] = (file_name, e)


def scalar_or_type(schema, field):
    t = TYPE_NAMES.get(field.type, str(field.type))
    if field.type in (F.TYPE_MESSAGE, F.TYPE_ENUM, F.TYPE_GROUP):
        return "%s %s" % (t, field.type_name.lstrip("."))
    return t


def describe(schema, field):
    """A field's type as protobuf source spells it: `map<K, V>`, `repeated T` or `T`."""
    entry = map_entry(schema, field)
    if entry is not None:
        k, v = entry
        return "map<%s, %s>" % (short(schema, k), short(schema, v))
    prefix = "repeated " if field.label == F.LABEL_REPEATED else ""
    return prefix + short(schema, field)


def short(schema, field):
    if field.type in (F.TYPE_MESSAGE, F.TYPE_ENUM, F.TYPE_GROUP):
        return field.type_name.lstrip(".")
    return TYPE_NAMES.get(field.type, str(field.type))


def map_entry(schema, field):
    """(key field, value field) when field is a map, else None."""
    if field.type != F.TYPE_MESSAGE or field.label != F.LABEL_REPEATED:
        return None
    entry = schema.map_entries.get(field.type_name.lstrip("."))
    if entry is None:
        return None
    by_num = {f.number: f for f in entry.field}
    return by_num.get(1), by_num.get(2)


def type_break(old_schema, new_schema, old, new):
    """Why changing old's type to new's breaks readers, or None when it does not (scalar/type only)."""
    o, n = short(old_schema, old), short(new_schema, new)
    if old.type == new.type and old.type_name == new.type_name:
        return None
    if o in FAMILIES and n in FAMILIES:
        (of, ow), (nf, nw) = FAMILIES[o], FAMILIES[n]
        if of == nf:
            if nw < ow:
                return "%s -> %s (narrowed to %d bits: values are truncated)" % (o, n, nw)
            return None
        return "%s -> %s (wire break)" % (o, n)
    kinds = {old.type, new.type}
    if kinds <= {F.TYPE_STRING, F.TYPE_BYTES}:
        return "%s -> %s (JSON break: string and bytes are encoded differently)" % (o, n)
    if old.type == new.type == F.TYPE_ENUM:
        return "enum %s -> enum %s (different enum type)" % (o, n)
    if old.type == new.type == F.TYPE_MESSAGE:
        return "message %s -> message %s (different message type)" % (o, n)
    if F.TYPE_ENUM in kinds:
        other = n if old.type == F.TYPE_ENUM else o
        if FAMILIES.get(other, ("",))[0] == "varint":
            return "%s -> %s (JSON break: enums are names, integers are numbers)" % (
                scalar_or_type(old_schema, old), scalar_or_type(new_schema, new))
    if F.TYPE_BOOL in kinds and (FAMILIES.get(o, ("",))[0] == "varint" or FAMILIES.get(n, ("",))[0] == "varint"):
        return "%s -> %s (JSON break: true/false are not numbers)" % (o, n)
    return "%s -> %s (wire break)" % (scalar_or_type(old_schema, old), scalar_or_type(new_schema, new))


def real_oneof(msg, field):
    """The name of the oneof field belongs to, ignoring proto3 `optional`'s synthetic oneofs."""
    if field.HasField("oneof_index") and not field.proto3_optional:
        return msg.oneof_decl[field.oneof_index].name
    return None


def field_changes(old_schema, new_schema, old_msg, new_msg, old, new):
    """Breaks between two fields that are the same field (same number or same name)."""
    out = []
    old_map, new_map = map_entry(old_schema, old), map_entry(new_schema, new)
    if (old_map is None) != (new_map is None):
        out.append("type changed %s -> %s (wire break)" % (describe(old_schema, old), describe(new_schema, new)))
    elif old_map is not None:
        for part, o, n in (("key", old_map[0], new_map[0]), ("value", old_map[1], new_map[1])):
            why = type_break(old_schema, new_schema, o, n)
            if why is not None:
                out.append("map %s type changed %s" % (part, why))
    else:
        if (old.label == F.LABEL_REPEATED) != (new.label == F.LABEL_REPEATED):
            out.append("label changed %s -> %s (wire and JSON break)" % (
                describe(old_schema, old), describe(new_schema, new)))
        else:
            why = type_break(old_schema, new_schema, old, new)
            if why is not None:
                out.append("type changed " + why)
    oo, no = real_oneof(old_msg, old), real_oneof(new_msg, new)
    if oo != no:
        if oo is None:
            out.append("moved into oneof %s (unsafe: setting another member clears it)" % no)
        elif no is None:
            out.append("moved out of oneof %s (unsafe: old writers and readers treat it as a member)" % oo)
        else:
            out.append("moved from oneof %s to oneof %s (unsafe)" % (oo, no))
    if old.name == new.name and old.json_name != new.json_name:
        out.append("JSON name changed \"%s\" -> \"%s\" (JSON break)" % (old.json_name, new.json_name))
    return out


def in_ranges(number, ranges):
    return any(lo <= number <= hi for lo, hi in ranges)


def uncovered(ranges, covering):
    """Parts of the inclusive ranges not inside any covering range, as inclusive ranges."""
    out = []
    for lo, hi in ranges:
        parts = [(lo, hi)]
        for clo, chi in covering:
            nxt = []
            for plo, phi in parts:
                if chi < plo or clo > phi:
                    nxt.append((plo, phi))
                    continue
                if plo < clo:
                    nxt.append((plo, clo - 1))
                if phi > chi:
                    nxt.append((chi + 1, phi))
            parts = nxt
        out.extend(parts)
    return out


def span(lo, hi, limit):
    if lo == hi:
        return "number %d" % lo
    return "numbers %d to %s" % (lo, "max" if hi >= limit else hi)


def reserved_changes(kind, old_ranges, new_ranges, old_names, new_names, new_items, limit):
    """Baseline reservations the new schema drops (and who took them). new_items: {number: name}."""
    out = []
    for lo, hi in uncovered(old_ranges, new_ranges):
        users = sorted((num, name) for num, name in new_items.items() if lo <= num <= hi)
        line = "reserved %s no longer reserved" % span(lo, hi, limit)
        if users:
            line += "; now used by %s %s (wire break)" % (
                kind, ", ".join("%s = %d" % (name, num) for num, name in users))
        else:
            line += " (a later release could reuse it)"
        out.append(line)
    by_name = {name: num for num, name in new_items.items()}
    for name in sorted(set(old_names) - set(new_names)):
        line = "reserved name \"%s\" no longer reserved" % name
        if name in by_name:
            line += "; now used by %s %s = %d (JSON break)" % (kind, name, by_name[name])
        else:
            line += " (a later release could reuse it)"
        out.append(line)
    return out


def compare_message(old_schema, new_schema, full, old_msg, new_msg):
    """[(subject, text)] for one message present in both schemas."""
    out = []
    old_num = {f.number: f for f in old_msg.field}
    new_num = {f.number: f for f in new_msg.field}
    old_name = {f.name: f for f in old_msg.field}
    new_name = {f.name: f for f in new_msg.field}
    new_ranges = [(r.start, r.end - 1) for r in new_msg.reserved_range]  # end is exclusive
    old_ranges = [(r.start, r.end - 1) for r in old_msg.reserved_range]
    new_reserved_names = set(new_msg.reserved_name)

    for f in sorted(old_msg.field, key=lambda x: x.number):
        subject = full + "." + f.name
        by_name = new_name.get(f.name)
        by_num = new_num.get(f.number)
        if by_name is not None:
            if by_name.number != f.number:
                line = "field number changed %d -> %d (wire break)" % (f.number, by_name.number)
                if by_num is not None and by_num.name not in old_name:
                    line += "; number %d now used by %s" % (f.number, by_num.name)
                out.append((subject, line))
            for change in field_changes(old_schema, new_schema, old_msg, new_msg, f, by_name):
                out.append((subject, change))
        elif by_num is not None:
            if by_num.name in old_name:
                out.append((subject, "field %d removed; its number is now used by field %s (wire break)"
                            % (f.number, by_num.name)))
            else:
                out.append((subject, "field %d renamed to %s (JSON name \"%s\" -> \"%s\"; JSON break)"
                            % (f.number, by_num.name, f.json_name, by_num.json_name)))
                for change in field_changes(old_schema, new_schema, old_msg, new_msg, f, by_num):
                    out.append((subject, change))
        else:
            line = removal("field", f.number, f.name, new_ranges, new_reserved_names)
            if line:
                out.append((subject, line))
    new_items = {f.number: f.name for f in new_msg.field if f.number not in old_num}
    for line in reserved_changes("field", old_ranges, new_ranges, old_msg.reserved_name,
                                 new_msg.reserved_name, new_items, MAX_FIELD_NUMBER):
        out.append((full, line))
    return out


def removal(kind, number, name, new_ranges, new_reserved_names):
    """The break line for a field or enum value that is gone, or None when both its number and its
    name are reserved in the new schema."""
    num_ok = in_ranges(number, new_ranges)
    name_ok = name in new_reserved_names
    if not num_ok and not name_ok:
        return "%s %d removed without reserving its number or name (wire and JSON break)" % (kind, number)
    if not num_ok:
        return "%s %d removed without reserving its number (wire break)" % (kind, number)
    if not name_ok:
        return "%s %d removed without reserving its name \"%s\" (JSON break)" % (kind, number, name)
    return None


def compare_enum(full, old_enum, new_enum):
    out = []
    old_name = {v.name: v for v in old_enum.value}
    new_name = {v.name: v for v in new_enum.value}
    new_num = {}
    for v in new_enum.value:
        new_num.setdefault(v.number, []).append(v)
    new_ranges = [(r.start, r.end) for r in new_enum.reserved_range]  # end is inclusive
    old_ranges = [(r.start, r.end) for r in old_enum.reserved_range]
    new_reserved_names = set(new_enum.reserved_name)
    old_numbers = {v.number for v in old_enum.value}

    for v in sorted(old_enum.value, key=lambda x: (x.number, x.name)):
        subject = full + "." + v.name
        same = new_name.get(v.name)
        if same is not None:
            if same.number != v.number:
                out.append((subject, "enum value number changed %d -> %d (wire break)" % (v.number, same.number)))
            continue
        holders = new_num.get(v.number, [])
        fresh = [w for w in holders if w.name not in old_name]
        if fresh:
            out.append((subject, "enum value %d renamed to %s (JSON break)" % (v.number, fresh[0].name)))
        elif holders:
            # Another baseline value was renumbered onto this one's number; that value gets its own line.
            out.append((subject, "enum value %d removed; its number is now used by %s (wire and JSON break)"
                        % (v.number, holders[0].name)))
        else:
            line = removal("enum value", v.number, v.name, new_ranges, new_reserved_names)
            if line:
                out.append((subject, line))
    new_items = {}
    for v in new_enum.value:
        if v.number not in old_numbers:
            new_items.setdefault(v.number, v.name)
    for line in reserved_changes("value", old_ranges, new_ranges, old_enum.reserved_name,
                                 new_enum.reserved_name, new_items, 2147483647):
        out.append((full, line))
    return out


def compare(old_fds, new_fds):
    """Returns (break lines, stats) for the baseline old_fds against new_fds."""
    old, new = Schema(old_fds), Schema(new_fds)
    breaks = []
    for full in sorted(old.messages):
        file_name, old_msg = old.messages[full]
        if full not in new.messages:
            what = "enum" if full in new.enums else "removed or renamed"
            breaks.append("%s: %s: message type %s (wire, JSON and generated-code break)" % (
                file_name, full, "turned into an enum" if what == "enum" else what))
            continue
        new_file, new_msg = new.messages[full]
        for subject, text in compare_message(old, new, full, old_msg, new_msg):
            breaks.append("%s: %s: %s" % (new_file, subject, text))
    for full in sorted(old.enums):
        file_name, old_enum = old.enums[full]
        if full not in new.enums:
            what = "turned into a message" if full in new.messages else "removed or renamed"
            breaks.append("%s: %s: enum type %s (JSON and generated-code break)" % (file_name, full, what))
            continue
        new_file, new_enum = new.enums[full]
        for subject, text in compare_enum(full, old_enum, new_enum):
            breaks.append("%s: %s: %s" % (new_file, subject, text))

    fields_added = values_added = 0
    for full, (_, msg) in new.messages.items():
        old_numbers = {f.number for f in old.messages[full][1].field} if full in old.messages else set()
        fields_added += sum(1 for f in msg.field if f.number not in old_numbers)
    for full, (_, enum) in new.enums.items():
        old_numbers = {v.number for v in old.enums[full][1].value} if full in old.enums else set()
        values_added += sum(1 for v in enum.value if v.number not in old_numbers)
    stats = {
        "messages": len(new.messages), "enums": len(new.enums),
        "types_added": len(set(new.messages) - set(old.messages)) + len(set(new.enums) - set(old.enums)),
        "fields_added": fields_added, "values_added": values_added,
    }
    return breaks, stats


def display(path):
    rel = os.path.relpath(os.path.abspath(path), ROOT)
    shown = path if rel.startswith("..") else rel
    return shown.rstrip("/") + "/" if os.path.isdir(path) else shown


def main(argv):
    parser = argparse.ArgumentParser(
        prog="schema-compat",
        description="Check that Schemas/imcodec/v1 stays compatible with the committed baseline "
                    "(see Schemas/baseline/README.md).")
    parser.add_argument("--update-baseline", action="store_true",
                        help="write the baseline from the current schemas (release time); refused "
                             "when the current schemas break the existing baseline")
    parser.add_argument("--baseline", default=DEFAULT_BASELINE,
                        help="baseline FileDescriptorSet (default: Schemas/baseline/imcodec-v1.binpb)")
    parser.add_argument("--schemas", default=DEFAULT_SCHEMAS,
                        help="schemas directory holding imcodec/v1/*.proto (default: Schemas)")
    args = parser.parse_args(argv)  # exits 2 on a usage error

    try:
        current = compile_schemas(os.path.abspath(args.schemas))
        new_fds = parse_set(current, "protoc's output")
        baseline = None
        if os.path.exists(args.baseline):
            with open(args.baseline, "rb") as f:
                baseline = parse_set(f.read(), args.baseline)
        elif not args.update_baseline:
            raise Usage("no baseline at %s (Scripts/schema-compat --update-baseline writes it)" % args.baseline)
    except (Usage, OSError) as e:
        sys.stderr.write("schema-compat: %s\n" % e)
        return 2

    breaks, stats = compare(baseline, new_fds) if baseline is not None else ([], None)
    if breaks:
        for line in breaks:
            print(line)
        sys.stdout.flush()
        sys.stderr.write("schema-compat: %d incompatible change%s against %s%s (see Schemas/baseline/README.md)\n"
                         % (len(breaks), "" if len(breaks) == 1 else "s", display(args.baseline),
                            "; baseline not updated" if args.update_baseline else ""))
        return 1

    if args.update_baseline:
        if baseline is not None and open(args.baseline, "rb").read() == current:
            print("schema-compat: baseline %s already matches %s" % (display(args.baseline), display(args.schemas)))
            return 0
        os.makedirs(os.path.dirname(os.path.abspath(args.baseline)), exist_ok=True)
        tmp = args.baseline + ".tmp"
        with open(tmp, "wb") as f:
            f.write(current)
        os.replace(tmp, args.baseline)
        print("schema-compat: wrote baseline %s from %s" % (display(args.baseline), display(args.schemas)))
        return 0

    def count(n, noun):
        return "%d %s%s" % (n, noun, "" if n == 1 else "s")
    print("schema-compat: %s is compatible with the baseline %s (%s, %s; %s, %s and %s added)"
          % (display(args.schemas), display(args.baseline), count(stats["messages"], "message"),
             count(stats["enums"], "enum"), count(stats["fields_added"], "field"),
             count(stats["values_added"], "value"), count(stats["types_added"], "type")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
