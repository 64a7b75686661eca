"""Oneofs: in the value type, a nested enum with a case per member and a `Kind` enum; in the view,
a `~Escapable` enum of member views, the `<oneof>Kind` and `<oneof>` accessors, and the `switch`
that builds the value's member from the view's."""

from .names import c_field_name, swift_field, lower_camel, upper_camel
from .schema import MESSAGE_FIELD, field_kind, swift_type
from .view_fields import lifetime_getter, view_read, view_type


def print_oneof_value_enum(p, schema, f, m, path, index, members):
    """`enum Choice: Sendable, Hashable` inside the message's struct."""
    oname = m.oneof_decl[index].name
    p.line("/// The members of the `%s` oneof." % oname)
    with p.block("public enum %s: Sendable, Hashable {" % upper_camel(oname)):
        for fld in members:
            p.doc(schema.comment(f, path + (MESSAGE_FIELD, list(m.field).index(fld))))
            p.line("/// Field `%s` (%d)." % (fld.name, fld.number))
            p.line("case %s(%s)" % (swift_field(fld.name), swift_type(schema, fld).rstrip("?")))
        p.line()
        p.line("/// Which member is set, without its value.")
        with p.block("public enum Kind: Int32, CaseIterable, Sendable, Hashable {"):
            for fld in members:
                p.line("/// Field `%s`." % fld.name)
                p.line("case %s = %d" % (swift_field(fld.name), fld.number))
            p.line()
            p.line("/// The member's name in the schema.")
            with p.block("public var protoName: String {"), p.switch("switch self {"):
                for fld in members:
                    p.line('case .%s: "%s"' % (swift_field(fld.name), fld.name))
        p.line()
        p.line("/// Which member is set.")
        with p.block("public var kind: Kind {"), p.switch("switch self {"):
            _print_kind_cases(p, members)


def _print_kind_cases(p, members):
    for fld in members:
        n = swift_field(fld.name)
        p.line("case .%s: .%s" % (n, n))


def print_oneof_view(p, schema, message_name, m, index, members):
    """Inside `Message.View`: the enum of member views and the two accessors."""
    oname = m.oneof_decl[index].name
    tname = upper_camel(oname)
    p.line("/// The members of the `%s` oneof, as views." % oname)
    with p.block("public enum %s: ~Escapable {" % tname):
        for fld in members:
            p.line("/// Field `%s` (%d)." % (fld.name, fld.number))
            p.line("case %s(%s)" % (swift_field(fld.name), view_type(schema, fld)))
        p.line()
        p.line("/// Which member is set, without its value.")
        with p.block("public var kind: %s.%s.Kind {" % (message_name, tname)), p.switch("switch self {"):
            _print_kind_cases(p, members)
    p.line()
    p.line("/// Which member of the `%s` oneof is set, or `nil` for none (or one this schema does not know)."
           % oname)
    with p.block("public var %sKind: %s.%s.Kind? {" % (lower_camel(oname), message_name, tname)):
        p.line("%s.%s.Kind(rawValue: Int32(bitPattern: _c.pointee.%s_case.rawValue))" % (
            message_name, tname, oname))
    p.line()
    p.line("/// The `%s` oneof: the member that is set, as a view, or `nil`." % oname)
    with lifetime_getter(p, "public var %s: %s?" % (swift_field(oname), tname)):
        with p.switch("switch _c.pointee.%s_case.rawValue {" % oname):
            for fld in members:
                p.line("case %d: return _overrideLifetime(%s.%s(%s), copying: self)" % (
                    fld.number, tname, swift_field(fld.name), _member_view_read(schema, fld)))
            p.line("default: return nil")
    p.line()


def _member_view_read(schema, fld):
    if field_kind(schema, fld) == "message":
        # protobuf-c allocates a set member; were it NULL, it reads as the empty message.
        name = schema.swift_name(fld.type_name)
        return "%s.View(_raw: _c.pointee.%s.map { UnsafeRawPointer($0) } ?? %s._empty, depth: _depth)" % (
            name, c_field_name(fld.name), name)
    return view_read(schema, fld)


def print_oneof_materialize(p, schema, m, index, members):
    """In `init(_viewOf:depth:)`: the value's oneof from the view's (`v`)."""
    oname = swift_field(m.oneof_decl[index].name)
    with p.switch("switch v.%s {" % oname):
        for fld in members:
            member = swift_field(fld.name)
            kind = field_kind(schema, fld)
            if kind == "message":
                value = "%s(_viewOf: member._raw, depth: depth)" % schema.swift_name(fld.type_name)
            elif kind in ("string", "bytes"):
                value = "member.materialize()"
            else:
                value = "member"
            p.line("case .%s(let member)?: %s = .%s(%s)" % (member, oname, member, value))
        p.line("case nil: %s = nil" % oname)
