"""Message value types: a public struct per message, its stored properties with their defaults,
`unknownFields`, and the enums of its oneofs (oneofs.py)."""

from .names import swift_field, upper_camel
from .oneofs import print_oneof_value_enum
from .schema import (MESSAGE_FIELD, MESSAGE_ONEOF, check_message_limits, default_value, in_oneof,
                     oneof_groups, swift_type)


def print_message(p, schema, full):
    f, m, path, names = schema.messages[full]
    if m.options.map_entry:
        return
    check_message_limits(full, m)
    p.doc(schema.comment(f, path), default="/// The `%s` message." % full[1:])
    with p.block("public struct %s: IMCodecMessage {" % names[-1]):
        p.line("/// The message's full name in Schemas/.")
        p.line('public static let protoMessageName = "%s"' % full[1:])
        p.line()
        _print_stored_properties(p, schema, f, m, path)
        p.line("/// Fields read from the wire that this schema does not know; they are written back on encode.")
        p.line("public var unknownFields = UnknownFields()")
        p.line()
        p.line("/// Creates a message with every field at its default.")
        p.line("public init() {}")
        for index, members in sorted(oneof_groups(m).items()):
            p.line()
            print_oneof_value_enum(p, schema, f, m, path, index, members)
    p.line()


def _print_stored_properties(p, schema, f, m, path):
    """One property per field in declaration order; a oneof's property where its first member is."""
    emitted_oneofs = set()
    for i, fld in enumerate(m.field):
        if in_oneof(fld):
            if fld.oneof_index in emitted_oneofs:
                continue
            emitted_oneofs.add(fld.oneof_index)
            oname = m.oneof_decl[fld.oneof_index].name
            p.doc(schema.comment(f, path + (MESSAGE_ONEOF, fld.oneof_index)),
                  default="/// The `%s` oneof: at most one of its members is set." % oname)
            p.line("public var %s: %s? = nil" % (swift_field(oname), upper_camel(oname)))
        else:
            p.doc(schema.comment(f, path + (MESSAGE_FIELD, i)),
                  default="/// Field `%s` (%d)." % (fld.name, fld.number))
            p.line("public var %s: %s = %s" % (swift_field(fld.name), swift_type(schema, fld),
                                              default_value(schema, fld)))
        p.line()

