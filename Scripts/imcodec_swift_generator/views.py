"""Views (read-only, in place over protobuf-c's decoded structs) and the values built from them.

For each message, `extension Message { ... }` holds the hooks the decode pipeline calls
(`_protobufCDescriptor`, `init(_protobufCMessage:)`), `init(_viewOf:depth:)` that builds the value
through the view, the `~Escapable` `View` itself, and `_empty`. A message some repeated field holds
also gets `Message.View.List`.
"""

from .names import c_field_name, swift_field
from .oneofs import print_oneof_materialize, print_oneof_view
from .schema import FD, MESSAGE_FIELD, field_kind, in_oneof, is_singular_message, oneof_groups
from .view_fields import lifetime_getter, materialize_expr, view_read, view_type


def print_view_extension(p, schema, full):
    f, m, path, names = schema.messages[full]
    if m.options.map_entry:
        return
    name = ".".join(names)
    ctype = schema.c_type(full)
    clower = schema.c_lower(full)
    with p.block("extension %s {" % name):
        p.line("public static let _protobufCDescriptor = _ProtobufCDescriptor(%s.self, %s__init)" % (ctype, clower))
        p.line()
        with p.block("public init(_protobufCMessage message: _ProtobufCMessage) {"):
            p.line("self.init(_viewOf: message.raw, depth: message.depth)")
        p.line()
        p.line("/// Builds the value from a view (what ``View/materialize()`` returns).")
        with p.block("public init(_ view: View) {"):
            p.line("self = view.materialize()")
        p.line()
        _print_value_from_view(p, schema, m, ctype)
        p.line()
        _print_view(p, schema, full)
        p.line()
        p.line("/// An empty `%s`, read when protobuf-c leaves a set oneof member NULL (it does not)." % ctype)
        with p.block("nonisolated(unsafe) static let _empty: UnsafeRawPointer = {", "}()"):
            p.line("let message = UnsafeMutablePointer<%s>.allocate(capacity: 1)" % ctype)
            p.line("%s__init(message)" % clower)
            p.line("return UnsafeRawPointer(message)")
    p.line()


def _print_value_from_view(p, schema, m, ctype):
    """`init(_viewOf:depth:)`: every field of the value read through the view's accessors."""
    p.line("/// Copies the message at `raw` (a `%s`) into a value, through its view; recurses" % ctype)
    p.line("/// once per nesting level (callers run it where ``DecodeStack`` says).")
    with p.block("init(_viewOf raw: UnsafeRawPointer, depth: Int) {"):
        p.line("let v = View(_raw: raw, depth: depth)")
        for fld in m.field:
            if in_oneof(fld):
                continue
            prop = swift_field(fld.name)
            if is_singular_message(schema, fld):
                p.line("if let field = v.%s { %s = %s(_viewOf: field._raw, depth: depth) }" % (
                    prop, prop, schema.swift_name(fld.type_name)))
            else:
                p.line("%s = %s" % (prop, materialize_expr(schema, fld, "v." + prop)))
        for index, members in sorted(oneof_groups(m).items()):
            print_oneof_materialize(p, schema, m, index, members)
        p.line("unknownFields = v.unknownFields")


def _print_view(p, schema, full):
    """`struct View: ~Escapable`: its storage, an accessor per field and oneof, and `materialize()`."""
    f, m, path, names = schema.messages[full]
    name = ".".join(names)
    ctype = schema.c_type(full)
    p.line("/// A read-only view of a decoded `%s`: every field read in place from" % full[1:])
    p.line("/// protobuf-c's struct in the decoder's arena, without copying. It lives only as long as the")
    p.line("/// call that lends it (`WireDecoder.withView(_:_:_:)`): it is `~Escapable`, and so is every view")
    p.line("/// it hands out. ``materialize()`` builds the value.")
    with p.block("public struct View: ~Escapable {"):
        _print_view_storage(p, ctype)
        for i, fld in enumerate(m.field):
            if in_oneof(fld):
                continue
            p.doc(schema.comment(f, path + (MESSAGE_FIELD, i)),
                  default="/// Field `%s` (%d)." % (fld.name, fld.number))
            _print_field_accessor(p, schema, fld)
            p.line()
        for index, members in sorted(oneof_groups(m).items()):
            print_oneof_view(p, schema, name, m, index, members)
        p.line("/// Whether the message holds fields this schema does not know.")
        p.line("public var hasUnknownFields: Bool { _c.pointee.base.n_unknown_fields > 0 }")
        p.line()
        p.line("/// The fields this schema does not know, as wire bytes (copied).")
        p.line("public var unknownFields: UnknownFields { CRead.unknownFields(_c.pointee.base) }")
        p.line()
        p.line("/// The full value. Deep messages are copied where the stack allows (see `DecodeStack`).")
        with p.block("public func materialize() -> %s {" % name):
            p.line("let raw = _raw")
            p.line("let depth = _depth")
            p.line("return (try? DecodeStack.run(depth: depth) { %s(_viewOf: raw, depth: depth) })" % name)
            with p.indent():
                p.line("?? %s(_viewOf: raw, depth: depth)" % name)


def _print_view_storage(p, ctype):
    """The view's pointer and depth, its two initializers, and `_c`, the pointer typed."""
    p.line("/// The `%s` this view reads." % ctype)
    p.line("let _raw: UnsafeRawPointer")
    p.line("/// How deep the decoded message nests below this view, at most (for ``materialize()``).")
    p.line("let _depth: Int")
    p.line()
    p.line("@_lifetime(borrow raw)")
    with p.block("init(_raw raw: UnsafeRawPointer, depth: Int) {"):
        p.line("_raw = raw")
        p.line("_depth = depth")
    p.line()
    p.line("/// A view of a message a decoder unpacked (`message` must be a `%s`)." % ctype)
    p.line("@usableFromInline @_lifetime(borrow message)")
    with p.block("init(_message message: borrowing _ProtobufCMessage) {"):
        p.line("_raw = UnsafeRawPointer(message.raw)")
        p.line("_depth = message.depth")
    p.line()
    p.line("private var _c: UnsafePointer<%s> { _raw.assumingMemoryBound(to: %s.self) }" % (ctype, ctype))
    p.line()


def _print_field_accessor(p, schema, fld):
    """The view's accessor for a field outside oneofs. Accessors that return a view (or a list of
    them) state their lifetime; plain numbers, bools and enums are returned as values."""
    prop = swift_field(fld.name)
    vt = view_type(schema, fld)
    if is_singular_message(schema, fld):
        with lifetime_getter(p, "public var %s: %s?" % (prop, vt)):
            p.line("guard let field = _c.pointee.%s else { return nil }" % c_field_name(fld.name))
            p.line("return _overrideLifetime(%s.View(_raw: UnsafeRawPointer(field), depth: _depth), copying: self)"
                   % schema.swift_name(fld.type_name))
    elif field_kind(schema, fld) in ("scalar", "enum") and not _is_repeated(fld):
        p.line("public var %s: %s { %s }" % (prop, vt, view_read(schema, fld)))
    else:
        with lifetime_getter(p, "public var %s: %s" % (prop, vt)):
            p.line("_overrideLifetime(%s, copying: self)" % view_read(schema, fld))


def _is_repeated(fld):
    return fld.label == FD.LABEL_REPEATED


def print_view_list(p, schema, full):
    """`M.View.List`: the elements of a repeated `M` field, as views (no allocation)."""
    name = schema.swift_name(full)
    with p.block("extension %s.View {" % name):
        p.line("/// The elements of a repeated `%s` field, read in place; as long-lived as the view" % full[1:])
        p.line("/// that lends them.")
        with p.block("public struct List: ~Escapable {"):
            p.line("/// protobuf-c's array of pointers to the elements.")
            p.line("let _base: UnsafeRawPointer?")
            p.line("let _depth: Int")
            p.line("/// The number of elements.")
            p.line("public let count: Int")
            p.line()
            p.line("@_lifetime(borrow base)")
            with p.block("init(_base base: UnsafeRawPointer?, count: Int, depth: Int) {"):
                p.line("_base = base")
                p.line("self.count = base == nil ? 0 : count")
                p.line("_depth = depth")
            p.line()
            p.line("/// Whether the field has no elements.")
            p.line("public var isEmpty: Bool { count == 0 }")
            p.line()
            p.line("/// The positions of the elements, `0..<count`.")
            p.line("public var indices: Range<Int> { 0..<count }")
            p.line()
            _print_list_access(p, name)
    p.line()


def _print_list_access(p, name):
    """`View.List`'s subscript, `first`, `last`, `forEach` and `materialize()`."""
    p.line("/// The element at `index`, which must be in `indices` (as for an array).")
    with lifetime_getter(p, "public subscript(index: Int) -> %s.View" % name):
        p.line('precondition(index >= 0 && index < count, "index out of range")')
        _print_load_element(p)
        p.line("return _overrideLifetime(%s.View(_raw: element ?? %s._empty, depth: _depth), copying: self)"
               % (name, name))
    p.line()
    for which, index in (("first", "0"), ("last", "count - 1")):
        p.line("/// The %s element, or `nil` when there is none." % which)
        with p.block("public var %s: %s.View? {" % (which, name)):
            p.line("@_lifetime(copy self)")
            p.line("get { isEmpty ? nil : self[%s] }" % index)
        p.line()
    p.line("/// Calls `body` with each element in order.")
    with p.block("public func forEach(_ body: (%s.View) throws -> Void) rethrows {" % name):
        p.line("for index in 0..<count { try body(self[index]) }")
    p.line()
    p.line("/// The elements as values.")
    with p.block("public func materialize() -> [%s] {" % name):
        p.line("var out: [%s] = []" % name)
        p.line("out.reserveCapacity(count)")
        with p.block("for index in 0..<count {"):
            _print_load_element(p)
            p.line("out.append(%s(_viewOf: element ?? %s._empty, depth: _depth))" % (name, name))
        p.line("return out")


def _print_load_element(p):
    """`let element`: the pointer to element `index` in protobuf-c's array (nil if protobuf-c left
    it NULL)."""
    p.line("let element = _base.unsafelyUnwrapped.load(")
    with p.indent():
        p.line("fromByteOffset: index * MemoryLayout<UnsafeRawPointer?>.stride, as: UnsafeRawPointer?.self)")
