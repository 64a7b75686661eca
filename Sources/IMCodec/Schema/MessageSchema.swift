/// The schema as the format engines (proto3 JSON, text format) read it: plain Swift, no C.
///
/// The seam builds it once from protobuf-c's descriptors (`CSeam/SchemaModel.swift`); an engine
/// gets the model of a message type from ``IMCodecMessage/messageSchema`` and follows
/// ``ValueSchema/message`` links to the types of sub-messages.
///
///     MessageSchema  imcodec.v1.Message
///       fields (by number) ── FieldSchema  1 "client_msg_id" / "clientMsgId"  value: string
///                          ── FieldSchema  9 "priority"  value: enumeration ──▶ EnumSchema
///                          ── FieldSchema 16 "custom_params"  map: key string, value string
///                          ── FieldSchema 19 "quote"  value: message ──▶ MessageSchema …
package final class MessageSchema: @unchecked Sendable {
    // Immutable once the seam has built the model (`fields` is set once, before publication,
    // because message types refer to each other).

    /// The full name, e.g. `imcodec.v1.Frame`.
    package let fullName: String

    /// The fields, in field-number order.
    package private(set) var fields: [FieldSchema] = []

    /// Index in ``fields`` + 1 by field number (0: no such field), for numbers below
    /// ``tableLimit``; larger numbers are in `byLargeNumber`.
    private var byNumber: [Int32] = []
    private var byLargeNumber: [UInt32: Int] = [:]
    private static let tableLimit = 4096
    /// The fields' schema names and indices in ``fields``, in the bytewise order of the names.
    private var byProtoName: [(name: [UInt8], index: Int)] = []
    private var byJSONName: [ArraySlice<UInt8>: Int] = [:]

    init(fullName: String) {
        self.fullName = fullName
    }

    /// Sets the fields (the seam's builder calls it once, before anyone reads the model).
    func setFields(_ fields: [FieldSchema]) {
        let sorted = fields.sorted { $0.number < $1.number }
        self.fields = sorted
        // Field numbers are small in IMCodec's schemas (the largest is in the hundreds); a table
        // indexed by number is a load per field for the printers.
        byNumber = [Int32](repeating: 0, count: min(Int(sorted.last?.number ?? 0) + 1, Self.tableLimit))
        for (index, field) in sorted.enumerated() {
            if Int(field.number) < Self.tableLimit {
                byNumber[Int(field.number)] = Int32(index + 1)
            } else {
                byLargeNumber[field.number] = index
            }
            byJSONName[field.name[...]] = index
        }
        byProtoName = sorted.enumerated().map { ($0.element.name, $0.offset) }
            .sorted { $0.name.lexicographicallyPrecedes($1.name) }
        for (index, field) in sorted.enumerated() {
            byJSONName[field.jsonName[...]] = index  // a json name wins over another field's schema name
        }
    }

    /// The index in ``fields`` of field `number`.
    @inline(__always)
    package func field(number: UInt32) -> Int? {
        guard Int(number) < byNumber.count else { return byLargeNumber[number] }
        let entry = byNumber[Int(number)]
        return entry == 0 ? nil : Int(entry) - 1
    }

    /// The index in ``fields`` of the field with this schema name (text format): a binary search
    /// that reads `name` in place.
    func field(protoName name: UnsafeBufferPointer<UInt8>) -> Int? {
        var low = 0
        var high = byProtoName.count
        while low < high {
            let middle = (low + high) / 2
            let order = Self.compare(byProtoName[middle].name, name)
            if order == 0 { return byProtoName[middle].index }
            if order < 0 { low = middle + 1 } else { high = middle }
        }
        return nil
    }

    /// Bytewise order of `a` and `b`: negative, zero or positive.
    private static func compare(_ a: [UInt8], _ b: UnsafeBufferPointer<UInt8>) -> Int {
        for k in 0..<min(a.count, b.count) where a[k] != b[k] { return Int(a[k]) - Int(b[k]) }
        return a.count - b.count
    }

    /// The index in ``fields`` of the field with this json name or schema name (proto3 JSON).
    func field(jsonName name: ArraySlice<UInt8>) -> Int? { byJSONName[name] }
}

/// One field of a message (a class: the engines pass fields around in their inner loops, and a
/// reference costs one retain where this struct's arrays and links would cost several).
package final class FieldSchema: Sendable {
    /// The field number.
    package let number: UInt32
    /// The name in the schema (`client_msg_id`).
    let name: [UInt8]
    /// protobuf's ToJsonName of it (`clientMsgId`).
    let jsonName: [UInt8]
    /// Whether the field is `repeated` (maps included).
    package let isRepeated: Bool
    /// Whether the schema packs it (a repeated scalar written as one length-delimited record).
    let isPacked: Bool
    /// The oneof the field belongs to: fields of one oneof share the number; nil outside oneofs.
    let oneof: Int?
    /// What one value (one element of a repeated field) is; for a map, the entry message.
    package let value: ValueSchema
    /// For a map field: its entry's key (field 1) and value (field 2).
    let map: MapEntrySchema?

    init(
        number: UInt32,
        name: [UInt8],
        isRepeated: Bool,
        isPacked: Bool,
        oneof: Int?,
        value: ValueSchema,
        map: MapEntrySchema?
    ) {
        self.number = number
        self.name = name
        self.jsonName = FieldSchema.jsonName(name)
        self.isRepeated = isRepeated
        self.isPacked = isPacked
        self.oneof = oneof
        self.value = value
        self.map = map
    }

    var nameString: String { String(decoding: name, as: UTF8.self) }

    /// protobuf's ToJsonName: drops each `_` and upper-cases the character after it.
    static func jsonName(_ name: [UInt8]) -> [UInt8] { camelCase(name, capitalizingFirst: false) }

    /// `name` without its `_`s, the letter after each upper-cased, and the first too when
    /// `capitalizingFirst` (protoc's ToJsonName, or the start of its MapEntryName).
    static func camelCase(_ name: [UInt8], capitalizingFirst: Bool) -> [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(name.count)
        var capitalizeNext = capitalizingFirst
        for c in name {
            if c == UInt8(ascii: "_") {
                capitalizeNext = true
            } else if capitalizeNext {
                result.append(c >= UInt8(ascii: "a") && c <= UInt8(ascii: "z") ? c - 32 : c)
                capitalizeNext = false
            } else {
                result.append(c)
            }
        }
        return result
    }
}

/// A map field's entry: `key` is field 1, `value` field 2 of the entry message.
struct MapEntrySchema: Sendable {
    let key: ValueSchema
    let value: ValueSchema
}

/// The type of one value: a singular field, one element of a repeated field, or a map entry's key
/// or value.
package struct ValueSchema: Sendable {
    package let kind: FieldKind
    /// For ``FieldKind/message``: the message type.
    package let message: MessageSchema?
    /// For ``FieldKind/enumeration``: the enum type.
    let enumeration: EnumSchema?

    /// The schema's name for the type, for error messages (`int64`, `imcodec.v1.Priority`).
    var typeName: String {
        switch kind {
        case .enumeration: enumeration?.fullName ?? "enum"
        case .message: message?.fullName ?? "message"
        default: kind.name
        }
    }
}

/// A field's type as the schema declares it.
package enum FieldKind: Sendable {
    case int32, sint32, sfixed32, int64, sint64, sfixed64
    case uint32, fixed32, uint64, fixed64
    case float, double, bool
    /// `string`: UTF-8 text.
    case string
    case bytes
    case enumeration
    case message

    /// The name of the type in a schema.
    var name: String {
        switch self {
        case .int32: "int32"
        case .sint32: "sint32"
        case .sfixed32: "sfixed32"
        case .int64: "int64"
        case .sint64: "sint64"
        case .sfixed64: "sfixed64"
        case .uint32: "uint32"
        case .fixed32: "fixed32"
        case .uint64: "uint64"
        case .fixed64: "fixed64"
        case .float: "float"
        case .double: "double"
        case .bool: "bool"
        case .string: "string"
        case .bytes: "bytes"
        case .enumeration: "enum"
        case .message: "message"
        }
    }

    /// Whether proto3 JSON writes the value as a string (the 64-bit integers).
    var is64BitInteger: Bool {
        switch self {
        case .int64, .sint64, .sfixed64, .uint64, .fixed64: true
        default: false
        }
    }
}

/// An enum type: its values' names and numbers.
final class EnumSchema: Sendable {
    /// The full name, e.g. `imcodec.v1.Priority`.
    let fullName: String
    /// Names by number for the numbers 0 ..< ``tableLimit`` (enum values are small and dense).
    private let smallNames: [[UInt8]?]
    private let names: [Int32: [UInt8]]
    private let numbers: [ArraySlice<UInt8>: Int32]
    private static let tableLimit: Int32 = 1024

    /// - Parameter values: Every value in the schema's order; for numbers given twice (aliases)
    ///   the first name is the one printed.
    init(fullName: String, values: [(name: [UInt8], number: Int32)]) {
        self.fullName = fullName
        var names: [Int32: [UInt8]] = [:]
        var numbers: [ArraySlice<UInt8>: Int32] = [:]
        for value in values {
            if names[value.number] == nil { names[value.number] = value.name }
            numbers[value.name[...]] = value.number
        }
        let largest = names.keys.filter { $0 >= 0 && $0 < Self.tableLimit }.max() ?? -1
        var smallNames = [[UInt8]?](repeating: nil, count: Int(largest) + 1)
        for (number, name) in names where number >= 0 && number <= largest { smallNames[Int(number)] = name }
        self.smallNames = smallNames
        self.names = names
        self.numbers = numbers
    }

    /// The name of value `number`, nil when the schema has none (proto3 enums are open).
    @inline(__always)
    func name(of number: Int32) -> [UInt8]? {
        number >= 0 && Int(number) < smallNames.count ? smallNames[Int(number)] : names[number]
    }

    /// The number of the value named `name`.
    func number(named name: ArraySlice<UInt8>) -> Int32? { numbers[name] }
}
