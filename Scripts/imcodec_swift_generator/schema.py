"""The schema as the generator sees it: every message and enum of the request, the kind of each
field, its Swift value type, and the rules a schema must follow (GeneratorError otherwise)."""

from google.protobuf import descriptor_pb2

from .names import camel_to_lower

FD = descriptor_pb2.FieldDescriptorProto

# Descriptor paths (SourceCodeInfo.Location.path): the field numbers of FileDescriptorProto and
# DescriptorProto that lead to a declaration, so that its comment can be found.
FILE_MESSAGE, FILE_ENUM = 4, 5
MESSAGE_FIELD, MESSAGE_NESTED, MESSAGE_ENUM, MESSAGE_ONEOF = 2, 3, 4, 8
ENUM_VALUE = 2

SCALARS = {
    FD.TYPE_INT32: ("Int32", "0"),
    FD.TYPE_SINT32: ("Int32", "0"),
    FD.TYPE_SFIXED32: ("Int32", "0"),
    FD.TYPE_INT64: ("Int64", "0"),
    FD.TYPE_SINT64: ("Int64", "0"),
    FD.TYPE_SFIXED64: ("Int64", "0"),
    FD.TYPE_UINT32: ("UInt32", "0"),
    FD.TYPE_FIXED32: ("UInt32", "0"),
    FD.TYPE_UINT64: ("UInt64", "0"),
    FD.TYPE_FIXED64: ("UInt64", "0"),
    FD.TYPE_FLOAT: ("Float", "0"),
    FD.TYPE_DOUBLE: ("Double", "0"),
    FD.TYPE_BOOL: ("Bool", "false"),
}


class GeneratorError(Exception):
    """A schema the generator refuses; the message goes to protoc (CodeGeneratorResponse.error)."""


class Schema:
    """Every message and enum of the request, by full name (`.pkg.Name`).

    `messages[full]` and `enums[full]` are `(file, descriptor, path, names)`: the file that declares
    it, its descriptor, its descriptor path (for comments) and its names from the outermost type.
    """

    def __init__(self, request):
        self.messages = {}
        self.enums = {}
        self.comments = {}
        for f in request.proto_file:
            pkg = f.package
            for loc in f.source_code_info.location:
                self.comments[(f.name, tuple(loc.path))] = loc.leading_comments
            for i, m in enumerate(f.message_type):
                self._add_message(f, pkg, m, [], (FILE_MESSAGE, i))
            for i, e in enumerate(f.enum_type):
                self.enums["." + pkg + "." + e.name] = (f, e, (FILE_ENUM, i), [e.name])

    def _add_message(self, f, pkg, m, outer, path):
        names = outer + [m.name]
        full = "." + pkg + "." + ".".join(names)
        self.messages[full] = (f, m, path, names)
        for i, n in enumerate(m.nested_type):
            self._add_message(f, pkg, n, names, path + (MESSAGE_NESTED, i))
        for i, e in enumerate(m.enum_type):
            self.enums[full + "." + e.name] = (f, e, path + (MESSAGE_ENUM, i), names + [e.name])

    def comment(self, f, path):
        """The leading comment of the declaration at `path` in file `f` ("" if none)."""
        return self.comments.get((f.name, tuple(path)), "")

    def is_map_entry(self, full):
        return self.messages[full][1].options.map_entry

    def swift_name(self, full):
        if full in self.messages:
            return ".".join(self.messages[full][3])
        return ".".join(self.enums[full][3])

    def c_type(self, full):
        """protoc-c's C struct or enum name (`Imcodec__V1__Frame`)."""
        f = self.messages[full][0] if full in self.messages else self.enums[full][0]
        names = (self.messages[full][3] if full in self.messages else self.enums[full][3])
        return "__".join([p.capitalize() for p in f.package.split(".")] + names)

    def c_lower(self, full):
        """protoc-c's prefix of a message's C functions (`imcodec__v1__frame`)."""
        f = self.messages[full][0]
        names = self.messages[full][3]
        return "__".join(f.package.split(".") + [camel_to_lower(n) for n in names])

    def listed(self):
        """The message types some repeated field holds (each gets a `View.List`)."""
        return {fld.type_name for (_, m, _, _) in self.messages.values() for fld in m.field
                if fld.label == FD.LABEL_REPEATED and field_kind(self, fld) == "message"}


def field_kind(schema, fld):
    """One of: scalar, string, bytes, enum, message, map."""
    if fld.type == FD.TYPE_MESSAGE:
        if fld.label == FD.LABEL_REPEATED and schema.is_map_entry(fld.type_name):
            return "map"
        return "message"
    if fld.type == FD.TYPE_STRING:
        return "string"
    if fld.type == FD.TYPE_BYTES:
        return "bytes"
    if fld.type == FD.TYPE_ENUM:
        return "enum"
    if fld.type == FD.TYPE_GROUP:
        raise GeneratorError("groups are not supported: " + fld.name)
    return "scalar"


def is_singular_message(schema, fld):
    return fld.label != FD.LABEL_REPEATED and field_kind(schema, fld) == "message"


def string_as_bytes(fld):
    # [(pb_c_field).string_as_bytes = true]: extension 1019 of FieldOptions (a message), whose
    # field 1 is the bool. Without protobuf-c.proto in our pool it stays unknown option bytes.
    raw = fld.options.SerializeToString()
    return fld.type == FD.TYPE_STRING and b"\xda\x3f\x02\x08\x01" in raw


def map_value_field(schema, fld):
    """The key and value fields of a map field's entry message."""
    entry = schema.messages[fld.type_name][1]
    return entry.field[0], entry.field[1]


def swift_type(schema, fld, element=False):
    """The Swift type of field `fld` in the value type (of one element, if `element`)."""
    kind = field_kind(schema, fld)
    if kind == "map":
        key, value = map_value_field(schema, fld)
        return "[%s: %s]" % (swift_type(schema, key, True), swift_type(schema, value, True))
    if kind == "scalar":
        base = SCALARS[fld.type][0]
    elif kind == "string":
        base = "String"
    elif kind == "bytes":
        base = "[UInt8]"
    else:
        base = schema.swift_name(fld.type_name)
    if element:
        return base
    if fld.label == FD.LABEL_REPEATED:
        return "[%s]" % base
    if kind == "message":
        return base + "?"
    return base


def default_value(schema, fld):
    """The Swift expression of field `fld`'s default in the value type."""
    kind = field_kind(schema, fld)
    if kind == "map":
        return "[:]"
    if fld.label == FD.LABEL_REPEATED:
        return "[]"
    if kind == "scalar":
        return SCALARS[fld.type][1]
    if kind == "string":
        return '""'
    if kind == "bytes":
        return "[]"
    if kind == "enum":
        return ".unspecified"
    return "nil"


def in_oneof(fld):
    """Whether `fld` is a member of a oneof. (protoc refuses proto3 `optional` fields, which would
    have a synthetic one, because the generator does not declare FEATURE_PROTO3_OPTIONAL.)"""
    return fld.HasField("oneof_index")


def oneof_groups(m):
    """{oneof index: [member fields]} of message `m`, members in declaration order."""
    groups = {}
    for fld in m.field:
        if fld.HasField("oneof_index") and not fld.proto3_optional:
            groups.setdefault(fld.oneof_index, []).append(fld)
    return groups


def check_no_value_cycles(schema):
    """A struct may not hold itself through singular fields (Swift structs would be infinite)."""
    def singular_children(full):
        m = schema.messages[full][1]
        return [fld.type_name for fld in m.field
                if fld.type == FD.TYPE_MESSAGE and fld.label != FD.LABEL_REPEATED]

    for start in schema.messages:
        seen, stack = set(), list(singular_children(start))
        while stack:
            cur = stack.pop()
            if cur == start:
                raise GeneratorError("%s contains itself through singular fields; use a repeated field"
                                     % start[1:])
            if cur not in seen:
                seen.add(cur)
                stack.extend(singular_children(cur))


def check_message_limits(full, m):
    """The runtime's per-message limits (checked before anything is written for the message)."""
    if len(m.field) > 64:
        # Sources/CIMCodecRuntime/prescan.c tracks singular sub-messages in a 64-bit set per message.
        raise GeneratorError("%s has more than 64 fields; split it" % full[1:])
    if len(m.oneof_decl) > 16:
        # Sources/CIMCodecRuntime/transcode.c tracks at most 16 oneofs per message when it merges.
        raise GeneratorError("%s has more than 16 oneofs; split it" % full[1:])
