"""Enums: a Swift enum with a case per value plus `unrecognized(Int32)`, so unknown numbers survive."""

from .names import enum_case_names
from .schema import ENUM_VALUE, GeneratorError


def print_enum(p, schema, full):
    f, e, path, names = schema.enums[full]
    cases = enum_case_names(e)
    if e.value[0].number != 0 or cases[0] != "unspecified":
        raise GeneratorError("enum %s must start with *_UNSPECIFIED = 0" % e.name)
    p.doc(schema.comment(f, path), default="/// The `%s` enum." % full[1:])
    with p.block("public enum %s: RawRepresentable, CaseIterable, Sendable, Hashable {" % e.name):
        for i, (v, case) in enumerate(zip(e.value, cases)):
            if p.doc(schema.comment(f, path + (ENUM_VALUE, i))):
                p.line("/// Wire name `%s`, number %d." % (v.name, v.number))
            else:
                p.line("/// `%s = %d`" % (v.name, v.number))
            p.line("case %s" % case)
        p.line("/// A number this version of the schema does not know; it survives a round trip.")
        p.line("case unrecognized(Int32)")
        p.line()
        p.line("/// Every value the schema names.")
        p.line("public static let allCases: [%s] = [%s]" % (e.name, ", ".join("." + c for c in cases)))
        p.line()
        _print_conversions(p, e, cases)
        p.line()
        p.line("public static func == (lhs: Self, rhs: Self) -> Bool { lhs.rawValue == rhs.rawValue }")
        p.line("public func hash(into hasher: inout Hasher) { hasher.combine(rawValue) }")
    p.line()


def _print_conversions(p, e, cases):
    """`init(rawValue:)`, `rawValue` and `protoName`: a `switch` over the values each."""
    p.line("/// Creates the value for a wire number; numbers the schema does not name become `unrecognized`.")
    with p.block("public init(rawValue: Int32) {"), p.switch("switch rawValue {"):
        for v, case in zip(e.value, cases):
            p.line("case %d: self = .%s" % (v.number, case))
        p.line("default: self = .unrecognized(rawValue)")
    p.line()
    p.line("/// The wire number.")
    with p.block("public var rawValue: Int32 {"), p.switch("switch self {"):
        for v, case in zip(e.value, cases):
            p.line("case .%s: %d" % (case, v.number))
        p.line("case .unrecognized(let number): number")
    p.line()
    p.line("/// The name the schema gives the value (`%s`), or the number when it has none." % e.value[0].name)
    with p.block("public var protoName: String {"), p.switch("switch self {"):
        for v, case in zip(e.value, cases):
            p.line('case .%s: "%s"' % (case, v.name))
        p.line("case .unrecognized(let number): String(number)")
