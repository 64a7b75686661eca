/// Prints a message as canonical proto3 JSON, walking its canonical wire bytes (what
/// ``IMCodecMessage/serializedBytes()`` writes) with the ``MessageSchema`` model (implementation
/// detail of ``IMCodecMessage/jsonString(options:)``).
///
/// The output is what Google's implementations print by default (checked against Python's
/// `json_format.MessageToJson`, protobuf 4.21): fields in field-number order, json names, proto3
/// defaults left out (but -0.0 printed: it is not the default bit pattern), set oneof members and
/// present sub-messages always printed, 64-bit integers as strings, doubles in Python's `repr`
/// style, `"NaN"` / `"Infinity"` / `"-Infinity"`, bytes as padded standard base64, enums by name
/// (unknown numbers as numbers), maps as objects sorted by key, unknown fields left out.
///
/// Canonical bytes already hold exactly the fields to print, in field-number order, each once,
/// the elements of a repeated field (or the entries of a map) one after another:
///
///     bytes:  0a 03 "c-1" │ 48 02 │ 82 01 06 0a 01 "a" 12 01 "1"       (a Message)
///             field 1       field 9  field 16: a map entry (key = 1, value = 2)
///     JSON:   {"clientMsgId":"c-1","priority":"PRIORITY_NORMAL","customParams":{"a":"1"}}
struct ProtoJSONPrinter {
    private var out: [UInt8] = []
    private let pretty: Bool
    private let asciiOnly: Bool
    private let protoNames: Bool
    private var level = 0

    private init(options: JSONEncodingOptions) {
        pretty = options.prettyPrinted
        asciiOnly = options.asciiOnly
        protoNames = options.preserveProtoFieldNames
    }

    /// Prints a value of type `M` from its canonical bytes: checked by the pre-scan (only the
    /// stack-depth cap applies to a value's own bytes), printed where the stack allows its nesting.
    static func printUTF8<M: IMCodecMessage>(
        canonical bytes: [UInt8],
        _ type: M.Type,
        options: JSONEncodingOptions
    ) throws(IMCodecError) -> [UInt8] {
        let decoding = DecodingOptions.ownBytes(maxDecodedMemory: Int.max, acceptsNewerFrames: true)
        return try DecodePipeline.withNesting(of: bytes, M.self, options: decoding) {
            printUTF8(canonical: bytes, schema: M.messageSchema, options: options)
        }
    }

    /// Decodes wire bytes of any form as an `M` with `decoding` (the one decode pipeline) and
    /// prints the value from its canonical bytes.
    static func printUTF8<M: IMCodecMessage>(
        binary bytes: [UInt8],
        _ type: M.Type,
        decoding: DecodingOptions,
        options: JSONEncodingOptions
    ) throws(IMCodecError) -> [UInt8] {
        try DecodePipeline.withCanonicalBytes(M.self, bytes, options: decoding) { canonical in
            printUTF8(canonical: canonical, schema: M.messageSchema, options: options)
        }
    }

    /// Prints canonical bytes of a message of type `schema` (recursing once per message level).
    private static func printUTF8(
        canonical bytes: [UInt8],
        schema: MessageSchema,
        options: JSONEncodingOptions
    )
        -> [UInt8]
    {
        var printer = ProtoJSONPrinter(options: options)
        printer.out.reserveCapacity(bytes.count * 2 + 16)
        bytes.withUnsafeBufferPointer { printer.printMessage($0, 0..<$0.count, schema) }
        return printer.out
    }

    // MARK: Layout

    @inline(__always)
    private mutating func ascii(_ s: StaticString) { out.append(ascii: s) }

    @inline(__always)
    private mutating func ascii(_ s: String) { out.append(contentsOf: s.utf8) }

    /// Before each member of an object or array: the comma, then (pretty) a newline and indent.
    @inline(__always)
    private mutating func beginItem(_ first: inout Bool) {
        if !first { out.append(UInt8(ascii: ",")) }
        first = false
        newline()
    }

    @inline(__always)
    private mutating func newline() {
        guard pretty else { return }
        out.append(0x0A)
        out.append(contentsOf: repeatElement(UInt8(ascii: " "), count: level * 2))
    }

    /// `"name":` (pretty: `"name": `).
    private mutating func key(_ name: [UInt8]) {
        name.withUnsafeBufferPointer { writeString($0) }
        out.append(UInt8(ascii: ":"))
        if pretty { out.append(UInt8(ascii: " ")) }
    }

    private mutating func open(_ bracket: UInt8) {
        out.append(bracket)
        level += 1
    }

    private mutating func close(_ bracket: UInt8, empty: Bool) {
        level -= 1
        if !empty { newline() }
        out.append(bracket)
    }

    // MARK: Messages

    /// Prints the message whose fields are `bytes[range]` as an object.
    private mutating func printMessage(
        _ bytes: UnsafeBufferPointer<UInt8>,
        _ range: Range<Int>,
        _ schema: MessageSchema
    ) {
        open(UInt8(ascii: "{"))
        var first = true
        var i = range.lowerBound
        let end = range.upperBound
        while i < end {
            let fieldStart = i
            guard let tag = WireFormat.readVarint(bytes, &i, end: end) else { break }  // never: our own bytes
            guard let index = schema.field(number: UInt32(truncatingIfNeeded: tag >> 3)),
                Self.isExpected(wireType: UInt8(tag & 7), schema.fields[index])
            else {
                // An unknown field (not printed in JSON).
                i = fieldStart
                if !WireReader.skipField(bytes, &i, end: end, groupBudget: Int.max) { break }
                continue
            }
            let field = schema.fields[index]
            beginItem(&first)
            key(protoNames ? field.name : field.jsonName)
            if let map = field.map {
                i = fieldStart
                printMap(field.number, map, bytes, &i, end: end)
            } else if field.isRepeated {
                i = fieldStart
                printArray(field, bytes, &i, end: end)
            } else {
                printValue(field.value.kind.readValue(bytes, &i, end: end), field.value, bytes)
            }
        }
        close(UInt8(ascii: "}"), empty: first)
    }

    /// Whether a field of the schema's `field` comes with `wireType`: its own, or length-delimited
    /// for a packed repeated scalar.
    private static func isExpected(wireType: UInt8, _ field: FieldSchema) -> Bool {
        let own = field.value.kind.wireType
        return wireType == own || (wireType == 2 && field.isRepeated && own != 2)
    }

    /// Skips the whole field at `i` (its tag and value).
    private static func skipUnknown(_ bytes: UnsafeBufferPointer<UInt8>, _ i: inout Int, end: Int) {
        if !WireReader.skipField(bytes, &i, end: end, groupBudget: Int.max) { i = end }
    }

    /// Reads the next field at `i` if it is field `number`: where its value starts and its wire
    /// type; otherwise leaves `i` where it was.
    private static func nextField(
        _ number: UInt32,
        _ bytes: UnsafeBufferPointer<UInt8>,
        _ i: inout Int,
        end: Int
    ) -> UInt8? {
        var next = i
        guard i < end, let tag = WireFormat.readVarint(bytes, &next, end: end), tag >> 3 == UInt64(number) else {
            return nil
        }
        i = next
        return UInt8(tag & 7)
    }

    /// The elements of a repeated field, one field or packed record after another, as an array.
    private mutating func printArray(
        _ field: FieldSchema,
        _ bytes: UnsafeBufferPointer<UInt8>,
        _ i: inout Int,
        end: Int
    ) {
        let kind = field.value.kind
        open(UInt8(ascii: "["))
        var first = true
        var next = i
        while let wireType = Self.nextField(field.number, bytes, &next, end: end) {
            if wireType == kind.wireType {
                i = next
                beginItem(&first)
                printValue(kind.readValue(bytes, &i, end: end), field.value, bytes)
            } else if wireType == 2 {
                i = next
                let length = Int(WireFormat.readVarint(bytes, &i, end: end) ?? 0)
                let recordEnd = min(i + length, end)
                while i < recordEnd {
                    beginItem(&first)
                    printValue(kind.readValue(bytes, &i, end: recordEnd), field.value, bytes)
                }
            } else {
                // The field's number with another wire type: an unknown field, as Google keeps it
                // (the canonical bytes put unknown fields after the known ones, so it can follow the
                // elements). Not printed, and the elements stay one array.
                Self.skipUnknown(bytes, &i, end: end)
            }
            next = i
        }
        close(UInt8(ascii: "]"), empty: false)
    }

    // MARK: Values

    private mutating func printValue(_ value: WireValue, _ schema: ValueSchema, _ bytes: UnsafeBufferPointer<UInt8>) {
        switch value {
        case .signed(let number):
            if schema.kind == .enumeration {
                if let name = schema.enumeration?.name(of: Int32(truncatingIfNeeded: number)) {
                    out.append(UInt8(ascii: "\""))
                    out.append(contentsOf: name)
                    out.append(UInt8(ascii: "\""))
                } else {
                    ascii(String(number))
                }
            } else if schema.kind.is64BitInteger {
                ascii("\"\(number)\"")
            } else {
                ascii(String(number))
            }
        case .unsigned(let number):
            if schema.kind.is64BitInteger { ascii("\"\(number)\"") } else { ascii(String(number)) }
        case .float(let number):
            printFloatingPoint(ProtoJSONNumberFormat.shortestFloat(number))
        case .double(let number):
            printFloatingPoint(number)
        case .bool(let flag):
            if flag { ascii("true") } else { ascii("false") }
        case .bytes(let range):
            switch schema.kind {
            case .message:
                if let message = schema.message { printMessage(bytes, range, message) } else { ascii("{}") }
            case .string:
                writeString(UnsafeBufferPointer(rebasing: bytes[range]))
            default:
                out.append(UInt8(ascii: "\""))
                Base64.encode(UnsafeBufferPointer(rebasing: bytes[range]), into: &out)
                out.append(UInt8(ascii: "\""))
            }
        }
    }

    private mutating func printFloatingPoint(_ value: Double) {
        if value.isNaN {
            ascii("\"NaN\"")
        } else if value.isInfinite {
            if value < 0 { ascii("\"-Infinity\"") } else { ascii("\"Infinity\"") }
        } else {
            ascii(ProtoJSONNumberFormat.pythonRepr(value))
        }
    }

    // MARK: Maps

    /// A map as an object: entries sorted by key (strings bytewise, numbers by value); a key that
    /// repeats keeps its last value, as protobuf specifies. An entry without its key or value has
    /// the default one.
    private mutating func printMap(
        _ number: UInt32,
        _ map: MapEntrySchema,
        _ bytes: UnsafeBufferPointer<UInt8>,
        _ i: inout Int,
        end: Int
    ) {
        var items: [MapItem] = []
        var next = i
        while let wireType = Self.nextField(number, bytes, &next, end: end) {
            // The map's number with another wire type: an unknown field (as in ``printArray``).
            guard wireType == 2 else {
                Self.skipUnknown(bytes, &i, end: end)
                next = i
                continue
            }
            i = next
            defer { next = i }
            let length = Int(WireFormat.readVarint(bytes, &i, end: end) ?? 0)
            let entryEnd = min(i + length, end)
            var key = WireValue.defaultValue(of: map.key.kind)
            var value = WireValue.defaultValue(of: map.value.kind)
            while i < entryEnd {
                let fieldStart = i
                let tag = WireFormat.readVarint(bytes, &i, end: entryEnd) ?? 0
                if tag == UInt64(WireFormat.tag(1, UInt64(map.key.kind.wireType))) {
                    key = map.key.kind.readValue(bytes, &i, end: entryEnd)
                } else if tag == UInt64(WireFormat.tag(2, UInt64(map.value.kind.wireType))) {
                    value = map.value.kind.readValue(bytes, &i, end: entryEnd)
                } else {
                    i = fieldStart
                    Self.skipUnknown(bytes, &i, end: entryEnd)
                }
            }
            i = entryEnd
            items.append(MapItem(key: MapKey(key, bytes), index: items.count, value: value))
        }
        items.sort { a, b in a.key == b.key ? a.index < b.index : a.key < b.key }
        open(UInt8(ascii: "{"))
        var first = true
        for position in items.indices {
            let item = items[position]
            if position + 1 < items.count && items[position + 1].key == item.key { continue }
            beginItem(&first)
            switch item.key {
            case .text(let text): writeString(text)
            case .signed(let value): ascii("\"\(value)\"")
            case .unsigned(let value): ascii("\"\(value)\"")
            case .bool(let value): ascii(value ? "\"true\"" : "\"false\"")
            }
            out.append(UInt8(ascii: ":"))
            if pretty { out.append(UInt8(ascii: " ")) }
            printValue(item.value, map.value, bytes)
        }
        close(UInt8(ascii: "}"), empty: first)
    }

    private struct MapItem {
        let key: MapKey
        let index: Int
        let value: WireValue
    }

    /// A map key (string keys point into the bytes being printed).
    private enum MapKey: Comparable {
        case text(UnsafeBufferPointer<UInt8>)
        case signed(Int64)
        case unsigned(UInt64)
        case bool(Bool)

        init(_ value: WireValue, _ bytes: UnsafeBufferPointer<UInt8>) {
            switch value {
            case .signed(let v): self = .signed(v)
            case .unsigned(let v): self = .unsigned(v)
            case .bool(let v): self = .bool(v)
            case .bytes(let range): self = .text(UnsafeBufferPointer(rebasing: bytes[range]))
            case .float, .double: self = .unsigned(0)  // never: map keys are integers, bool or string
            }
        }

        /// Bytewise order of two texts: the first differing byte, then the shorter first.
        private static func compare(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Int {
            for k in 0..<min(a.count, b.count) where a[k] != b[k] { return Int(a[k]) - Int(b[k]) }
            return a.count - b.count
        }

        static func < (a: MapKey, b: MapKey) -> Bool {
            switch (a, b) {
            case (.text(let x), .text(let y)): compare(x, y) < 0
            case (.signed(let x), .signed(let y)): x < y
            case (.unsigned(let x), .unsigned(let y)): x < y
            case (.bool(let x), .bool(let y)): !x && y
            default: false
            }
        }

        static func == (a: MapKey, b: MapKey) -> Bool {
            switch (a, b) {
            case (.text(let x), .text(let y)): compare(x, y) == 0
            case (.signed(let x), .signed(let y)): x == y
            case (.unsigned(let x), .unsigned(let y)): x == y
            case (.bool(let x), .bool(let y)): x == y
            default: false
            }
        }
    }

    // MARK: Strings

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    private mutating func escapeUnit(_ unit: UInt32) {
        out.append(UInt8(ascii: "\\"))
        out.append(UInt8(ascii: "u"))
        out.append(ProtoJSONPrinter.hexDigits[Int(unit >> 12 & 0xF)])
        out.append(ProtoJSONPrinter.hexDigits[Int(unit >> 8 & 0xF)])
        out.append(ProtoJSONPrinter.hexDigits[Int(unit >> 4 & 0xF)])
        out.append(ProtoJSONPrinter.hexDigits[Int(unit & 0xF)])
    }

    /// Writes a JSON string as Python's `json.dumps` does: `\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`,
    /// other control characters as `\u00XX` (lower-case hex); with ``JSONEncodingOptions/asciiOnly``
    /// also DEL and everything above ASCII as `\uXXXX`, surrogate pairs above U+FFFF.
    private mutating func writeString(_ bytes: UnsafeBufferPointer<UInt8>) {
        out.append(UInt8(ascii: "\""))
        var i = 0
        let n = bytes.count
        while i < n {
            let b = bytes[i]
            switch b {
            case UInt8(ascii: "\""): ascii("\\\""); i += 1
            case UInt8(ascii: "\\"): ascii("\\\\"); i += 1
            case 0x08: ascii("\\b"); i += 1
            case 0x0C: ascii("\\f"); i += 1
            case 0x0A: ascii("\\n"); i += 1
            case 0x0D: ascii("\\r"); i += 1
            case 0x09: ascii("\\t"); i += 1
            case ..<0x20: escapeUnit(UInt32(b)); i += 1
            case ..<0x7F: out.append(b); i += 1
            case 0x7F:
                if asciiOnly { escapeUnit(0x7F) } else { out.append(b) }
                i += 1
            default:
                // A multi-byte UTF-8 sequence (checked by the pre-scan; repaired to U+FFFD if not).
                let (scalar, length) = ProtoJSONPrinter.decodeUTF8(bytes, at: i)
                if asciiOnly {
                    if scalar > 0xFFFF {
                        let v = scalar - 0x10000
                        escapeUnit(0xD800 + (v >> 10))
                        escapeUnit(0xDC00 + (v & 0x3FF))
                    } else {
                        escapeUnit(scalar)
                    }
                } else if scalar == 0xFFFD
                    && !(length == 3 && bytes[i] == 0xEF && bytes[i + 1] == 0xBF && bytes[i + 2] == 0xBD)
                {
                    out.append(contentsOf: [0xEF, 0xBF, 0xBD])
                } else {
                    out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[i..<i + length]))
                }
                i += length
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// Decodes the UTF-8 sequence at `i` (its first byte is >= 0x80): the scalar and its length;
    /// an invalid sequence gives U+FFFD and length 1.
    private static func decodeUTF8(_ bytes: UnsafeBufferPointer<UInt8>, at i: Int) -> (UInt32, Int) {
        let b0 = UInt32(bytes[i])
        func continuation(_ k: Int) -> UInt32? {
            guard i + k < bytes.count, bytes[i + k] & 0xC0 == 0x80 else { return nil }
            return UInt32(bytes[i + k] & 0x3F)
        }
        switch b0 {
        case 0xC2...0xDF:
            if let c1 = continuation(1) { return ((b0 & 0x1F) << 6 | c1, 2) }
        case 0xE0...0xEF:
            if let c1 = continuation(1), let c2 = continuation(2) {
                let scalar = (b0 & 0x0F) << 12 | c1 << 6 | c2
                if scalar >= 0x800 && !(0xD800...0xDFFF).contains(scalar) { return (scalar, 3) }
            }
        case 0xF0...0xF4:
            if let c1 = continuation(1), let c2 = continuation(2), let c3 = continuation(3) {
                let scalar = (b0 & 0x07) << 18 | c1 << 12 | c2 << 6 | c3
                if scalar >= 0x10000 && scalar <= 0x10FFFF { return (scalar, 4) }
            }
        default:
            break
        }
        return (0xFFFD, 1)
    }
}
