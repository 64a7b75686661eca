"""How one field reads through a view: the type its accessor returns, the expression that reads it
from protobuf-c's C struct, and the expression that builds its value from the view."""

from contextlib import contextmanager

from .names import c_field_name
from .schema import FD, SCALARS, GeneratorError, field_kind, map_value_field, string_as_bytes, swift_type


def view_type(schema, fld):
    """The Swift type a view accessor returns for a field (not a oneof)."""
    kind = field_kind(schema, fld)
    if kind == "map":
        key, value = map_value_field(schema, fld)
        if field_kind(schema, key) != "string" or field_kind(schema, value) != "string":
            raise GeneratorError("only map<string, string> is supported: " + fld.name)
        return "StringMapView"
    if fld.label == FD.LABEL_REPEATED:
        if kind == "message":
            return schema.swift_name(fld.type_name) + ".View.List"
        if kind == "string":
            return "StringListView"
        if kind == "scalar" and fld.type not in (FD.TYPE_BOOL,):
            return "ScalarListView<%s>" % SCALARS[fld.type][0]
        raise GeneratorError("repeated %s fields have no view yet: %s" % (kind, fld.name))
    if kind == "message":
        return schema.swift_name(fld.type_name) + ".View"
    if kind == "string":
        return "StringView"
    if kind == "bytes":
        return "BytesView"
    return swift_type(schema, fld)


def view_read(schema, fld, c="_c"):
    """The expression of a view accessor for `fld` (not a oneof), reading the C struct `c`."""
    kind = field_kind(schema, fld)
    cname = c_field_name(fld.name)
    acc = "%s.pointee.%s" % (c, cname)
    if fld.label == FD.LABEL_REPEATED:
        count = "%s.pointee.n_%s" % (c, cname)
        if kind == "map":
            entry = schema.c_type(fld.type_name)
            return ("StringMapView(_entries: UnsafeRawPointer(%s), count: %s, keyOffset: "
                    "MemoryLayout<%s>.offset(of: \\.key)!, valueOffset: MemoryLayout<%s>.offset(of: \\.value)!)"
                    % (acc, count, entry, entry))
        if kind == "message":
            return "%s.View.List(_base: UnsafeRawPointer(%s), count: %s, depth: _depth)" % (
                schema.swift_name(fld.type_name), acc, count)
        if kind == "string":
            return "StringListView(_base: UnsafeRawPointer(%s), count: %s)" % (acc, count)
        return "ScalarListView(_base: UnsafeRawPointer(%s), count: %s)" % (acc, count)
    if kind == "message":
        return "%s.View(_raw: UnsafeRawPointer(%s), depth: _depth)" % (schema.swift_name(fld.type_name), acc)
    if kind == "string":
        if not string_as_bytes(fld):
            raise GeneratorError("string field without string_as_bytes: " + fld.name)
        return "StringView(%s)" % acc
    if kind == "bytes":
        return "BytesView(%s)" % acc
    if kind == "enum":
        return "%s(rawValue: Int32(bitPattern: %s.rawValue))" % (schema.swift_name(fld.type_name), acc)
    if fld.type == FD.TYPE_BOOL:
        return "%s != 0" % acc
    return acc


def materialize_expr(schema, fld, view):
    """The value of field `fld` (not a oneof, not a singular message) built from its view `view`."""
    kind = field_kind(schema, fld)
    if fld.label != FD.LABEL_REPEATED and kind == "message":
        raise AssertionError("singular messages are handled by the caller")
    if kind in ("string", "bytes", "map") or fld.label == FD.LABEL_REPEATED:
        return "%s.materialize()" % view
    return view


@contextmanager
def lifetime_getter(p, decl):
    """A computed property whose getter returns a view: `decl {`, `@_lifetime(copy self)`, `get {`,
    the lines printed inside the `with`, and the closing braces. The lifetime is what keeps the
    returned view from outliving the view it came from."""
    with p.block(decl + " {"):
        p.line("@_lifetime(copy self)")
        with p.block("get {"):
            yield
