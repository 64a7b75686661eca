"""Encoders: `_encode(to:)` per message, writing canonical wire bytes back to front (like upb's
encoder) into a `_WireWriter`: unknown fields first, then fields by descending number, so every
length is known when its prefix is written."""

from .names import swift_field
from .schema import FD, GeneratorError, field_kind, in_oneof, is_singular_message, map_value_field

WIRE = {
    FD.TYPE_INT32: 0, FD.TYPE_INT64: 0, FD.TYPE_UINT32: 0, FD.TYPE_UINT64: 0, FD.TYPE_SINT32: 0,
    FD.TYPE_SINT64: 0, FD.TYPE_BOOL: 0, FD.TYPE_ENUM: 0,
    FD.TYPE_FIXED64: 1, FD.TYPE_SFIXED64: 1, FD.TYPE_DOUBLE: 1,
    FD.TYPE_FIXED32: 5, FD.TYPE_SFIXED32: 5, FD.TYPE_FLOAT: 5,
    FD.TYPE_STRING: 2, FD.TYPE_BYTES: 2, FD.TYPE_MESSAGE: 2,
}
LENGTH_DELIMITED = 2

# The statement that writes a value of each scalar type (not its tag); %(v)s is the value.
SCALAR_WRITES = {
    FD.TYPE_INT32: "w.writeVarint(UInt64(bitPattern: Int64(%(v)s)))",
    FD.TYPE_INT64: "w.writeVarint(UInt64(bitPattern: Int64(%(v)s)))",
    FD.TYPE_UINT32: "w.writeVarint(UInt64(%(v)s))",
    FD.TYPE_UINT64: "w.writeVarint(UInt64(%(v)s))",
    FD.TYPE_SINT32: "w.writeVarint(UInt64(UInt32(bitPattern: (%(v)s << 1) ^ (%(v)s >> 31))))",
    FD.TYPE_SINT64: "w.writeVarint(UInt64(bitPattern: (%(v)s << 1) ^ (%(v)s >> 63)))",
    FD.TYPE_BOOL: "w.writeVarint(%(v)s ? 1 : 0)",
    FD.TYPE_ENUM: "w.writeVarint(UInt64(bitPattern: Int64(%(v)s.rawValue)))",
    FD.TYPE_DOUBLE: "w.writeFixed64(%(v)s.bitPattern)",
    FD.TYPE_FLOAT: "w.writeFixed32(%(v)s.bitPattern)",
    FD.TYPE_FIXED64: "w.writeFixed64(%(v)s)",
    FD.TYPE_SFIXED64: "w.writeFixed64(UInt64(bitPattern: %(v)s))",
    FD.TYPE_FIXED32: "w.writeFixed32(%(v)s)",
    FD.TYPE_SFIXED32: "w.writeFixed32(UInt32(bitPattern: %(v)s))",
    FD.TYPE_STRING: "w.writeString(%(v)s)",
    FD.TYPE_BYTES: "w.writeBytes(%(v)s)",
}


def scalar_write(fld, value):
    """A statement writing the value of a scalar (not its tag)."""
    if fld.type not in SCALAR_WRITES:
        raise GeneratorError("no scalar writer for " + fld.name)
    return SCALAR_WRITES[fld.type] % {"v": value}


def is_set(fld, value):
    """proto3 implicit presence: whether a singular scalar differs from its default."""
    t = fld.type
    if t in (FD.TYPE_DOUBLE, FD.TYPE_FLOAT):
        return "%s.bitPattern != 0" % value  # -0.0 is written, as Google's encoders do
    if t == FD.TYPE_BOOL:
        return value
    if t in (FD.TYPE_STRING, FD.TYPE_BYTES):
        return "!%s.isEmpty" % value
    if t == FD.TYPE_ENUM:
        return "%s.rawValue != 0" % value
    return "%s != 0" % value


def tag(fld, wire=None):
    return (fld.number << 3) | (WIRE[fld.type] if wire is None else wire)


def print_encoder(p, schema, full):
    f, m, path, names = schema.messages[full]
    if m.options.map_entry:
        return
    with p.block("extension %s {" % ".".join(names)), p.block("public func _encode(to w: inout _WireWriter) {"):
        p.line("// Back to front: unknown fields (written last on the wire) first, then fields by")
        p.line("// descending number, so every length is known when its prefix is written.")
        p.line("w.writeRaw(unknownFields.bytes)")
        switched = _switched_oneofs(m)
        written = set()
        for fld in sorted(m.field, key=lambda x: -x.number):
            if in_oneof(fld) and fld.oneof_index in switched:
                if fld.oneof_index not in written:
                    written.add(fld.oneof_index)
                    _print_oneof_switch(p, schema, m, fld.oneof_index)
            elif in_oneof(fld):
                oname = swift_field(m.oneof_decl[fld.oneof_index].name)
                with p.block("if case .%s(let value)? = self.%s {" % (swift_field(fld.name), oname)):
                    print_field_write(p, schema, fld, "value", presence=False)
            elif is_singular_message(schema, fld):
                with p.block("if let value = self.%s {" % swift_field(fld.name)):
                    print_field_write(p, schema, fld, "value")
            else:
                print_field_write(p, schema, fld, "self." + swift_field(fld.name))
    p.line()


def _switched_oneofs(m):
    """The oneofs written by one `switch`: those whose member numbers no other field's number falls
    between (one look at the enum; an `if case` per member copies the enum out each time)."""
    switched = set()
    for index in range(len(m.oneof_decl)):
        members = [x.number for x in m.field if in_oneof(x) and x.oneof_index == index]
        others = [x.number for x in m.field if not (in_oneof(x) and x.oneof_index == index)]
        if members and not any(min(members) < n < max(members) for n in others):
            switched.add(index)
    return switched


def _print_oneof_switch(p, schema, m, index):
    """One `switch` over the oneof, its members by descending number."""
    with p.switch("switch self.%s {" % swift_field(m.oneof_decl[index].name)):
        for member in sorted(m.field, key=lambda x: -x.number):
            if in_oneof(member) and member.oneof_index == index:
                p.line("case .%s(let value)?:" % swift_field(member.name))
                with p.indent():
                    print_field_write(p, schema, member, "value", presence=False)
        p.line("case nil:")
        with p.indent():
            p.line("break")


def print_field_write(p, schema, fld, value, presence=True):
    """The statements writing field `fld` (its value is the Swift expression `value`), back to
    front: value, then length (if delimited), then tag. With `presence`, a singular scalar at its
    default is not written (proto3 implicit presence); oneof members are always written."""
    kind = field_kind(schema, fld)
    if kind == "map":
        _print_map_write(p, fld, value, *map_value_field(schema, fld))
    elif fld.label == FD.LABEL_REPEATED:
        _print_repeated_write(p, fld, kind, value)
    elif kind == "message":
        p.line("let mark = w.count")
        p.line("%s._encode(to: &w)" % value)
        p.line("w.writeVarint(UInt64(w.count - mark))")
        p.line("w.writeVarint(%d)" % tag(fld))
    elif presence:
        with p.block("if %s {" % is_set(fld, value)):
            p.line(scalar_write(fld, value))
            p.line("w.writeVarint(%d)" % tag(fld))
    else:
        p.line(scalar_write(fld, value))
        p.line("w.writeVarint(%d)" % tag(fld))


def _print_map_write(p, fld, value, key, val):
    if key.type != FD.TYPE_STRING:
        raise GeneratorError("only string map keys are supported (the order of the entries): " + fld.name)
    # Entries sorted by key without allocating (see _WireWriter.writeMap).
    with p.block("w.writeMap(%s) { w, key, value in" % value):
        p.line("let mark = w.count")
        p.line(scalar_write(val, "value"))
        p.line("w.writeVarint(%d)" % tag(val))
        p.line(scalar_write(key, "key"))
        p.line("w.writeVarint(%d)" % tag(key))
        p.line("w.writeVarint(UInt64(w.count - mark))")
        p.line("w.writeVarint(%d)" % tag(fld))


def _print_repeated_write(p, fld, kind, value):
    if kind == "message":
        # Indices, not .reversed(): no copy of each element.
        with p.block("for i in stride(from: %s.count - 1, through: 0, by: -1) {" % value):
            p.line("let mark = w.count")
            p.line("%s[i]._encode(to: &w)" % value)
            p.line("w.writeVarint(UInt64(w.count - mark))")
            p.line("w.writeVarint(%d)" % tag(fld))
    elif kind in ("string", "bytes"):
        with p.block("for i in stride(from: %s.count - 1, through: 0, by: -1) {" % value):
            p.line(scalar_write(fld, "%s[i]" % value))
            p.line("w.writeVarint(%d)" % tag(fld))
    else:  # packed
        with p.block("if !%s.isEmpty {" % value):
            p.line("let mark = w.count")
            p.line("for element in %s.reversed() { %s }" % (value, scalar_write(fld, "element")))
            p.line("w.writeVarint(UInt64(w.count - mark))")
            p.line("w.writeVarint(%d)" % tag(fld, LENGTH_DELIMITED))
