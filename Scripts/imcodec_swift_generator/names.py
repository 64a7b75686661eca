"""How schema names become Swift names (and the C names protoc-c gives them)."""

import re

SWIFT_KEYWORDS = {
    "associatedtype", "class", "deinit", "enum", "extension", "fileprivate", "func", "import",
    "init", "inout", "internal", "let", "open", "operator", "private", "precedencegroup",
    "protocol", "public", "rethrows", "static", "struct", "subscript", "typealias", "var", "break",
    "case", "catch", "continue", "default", "defer", "do", "else", "fallthrough", "for", "guard",
    "if", "in", "repeat", "return", "throw", "switch", "where", "while", "Any", "as", "await",
    "false", "is", "nil", "self", "Self", "super", "throws", "true", "try", "Type", "Protocol",
}
# protoc-c's FieldName (c_helpers.cc) appends "_" to these C/C++ keywords.
C_KEYWORDS = {
    "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break", "case", "catch", "char",
    "class", "compl", "const", "const_cast", "continue", "default", "delete", "do", "double",
    "dynamic_cast", "else", "enum", "explicit", "extern", "false", "float", "for", "friend", "goto",
    "if", "inline", "int", "long", "mutable", "namespace", "new", "not", "not_eq", "operator", "or",
    "or_eq", "private", "protected", "public", "register", "reinterpret_cast", "return", "short",
    "signed", "sizeof", "static", "static_cast", "struct", "switch", "template", "this", "throw",
    "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using", "virtual", "void",
    "volatile", "wchar_t", "while", "xor", "xor_eq",
}
INITIALISMS = {"id": "ID", "ids": "IDs", "url": "URL", "uid": "UID", "uuid": "UUID"}


def escape(name):
    """`name` in backticks when it is a Swift keyword."""
    return "`%s`" % name if name in SWIFT_KEYWORDS else name


def lower_camel(snake):
    """`user_id` -> `userID`."""
    words = [w for w in snake.split("_") if w]
    out = words[0]
    for w in words[1:]:
        out += INITIALISMS.get(w, w[:1].upper() + w[1:])
    return out


def upper_camel(snake):
    """`user_id` -> `UserID`."""
    s = lower_camel(snake)
    return s[:1].upper() + s[1:]


def swift_field(name):
    """The Swift property (or case) for a schema field or oneof name, escaped."""
    return escape(lower_camel(name))


def c_field_name(name):
    """protoc-c's name for a field in the C struct."""
    name = name.lower()
    return name + "_" if name in C_KEYWORDS else name


def camel_to_lower(name):
    """protoc-c's CamelToLower (c_helpers.cc), used for C function and descriptor names."""
    was_upper = True
    out = ""
    for ch in name:
        is_upper = ch.isupper()
        if is_upper:
            if not was_upper:
                out += "_"
            out += ch.lower()
        else:
            out += ch
        was_upper = is_upper
    return out


def enum_case_names(e):
    """The Swift case of each value of enum `e`, its `E_NAME_` prefix dropped (`COLOR_RED` -> `red`)."""
    prefix = re.sub(r"(?<!^)(?=[A-Z])", "_", e.name).upper() + "_"
    out = []
    for v in e.value:
        name = v.name[len(prefix):] if v.name.startswith(prefix) else v.name
        out.append(escape(lower_camel(name.lower())))
    return out
