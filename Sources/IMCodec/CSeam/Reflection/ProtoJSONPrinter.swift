internal import CIMCodecRuntime
internal import CIMCodecSchemas
internal import CProtobufC

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Prints a protobuf-c message as canonical proto3 JSON, walking its ProtobufCMessageDescriptor
/// (implementation detail of ``IMCodecMessage/jsonString(options:)``).
///
/// The output is what Google's implementations print by default (checked against Python's
/// `json_format.MessageToJson`, protobuf 4.21): fields in field-number order, json names, proto3
/// defaults left out (but -0.0 printed: it is not the default bit pattern), set oneof members and
/// present sub-messages always printed, 64-bit integers as strings, doubles in Python's `repr`
/// style, `"NaN"` / `"Infinity"` / `"-Infinity"`, bytes as padded standard base64, enums by name
/// (unknown numbers as numbers), maps as objects sorted by key, unknown fields left out.
struct ProtoJSONPrinter {
    private var out: [UInt8] = []
    private let pretty: Bool
    private let asciiOnly: Bool
    private let protoNames: Bool
    private var level = 0
    private let descriptors = ProtoJSONDescriptors()

    private init(options: JSONEncodingOptions) {
        pretty = options.prettyPrinted
        asciiOnly = options.asciiOnly
        protoNames = options.preserveProtoFieldNames
    }

    /// Decodes `bytes` (through ``DecodePipeline``) and prints the message.
    static func print(
        binary bytes: [UInt8],
        descriptor: _ProtobufCDescriptor,
        decoding: DecodingOptions,
        options: JSONEncodingOptions
    ) throws(IMCodecError) -> String {
        String(
            decoding: try printUTF8(binary: bytes, descriptor: descriptor, decoding: decoding, options: options),
            as: UTF8.self
        )
    }

    /// Prints a protobuf-c message of type `descriptor`.
    static func print(
        _ message: UnsafeRawPointer,
        descriptor: UnsafePointer<ProtobufCMessageDescriptor>,
        options: JSONEncodingOptions
    ) -> String {
        String(decoding: printUTF8(message, descriptor: descriptor, options: options), as: UTF8.self)
    }

    /// Prints a protobuf-c message of type `descriptor` as the UTF-8 bytes of its JSON.
    static func printUTF8(
        _ message: UnsafeRawPointer,
        descriptor: UnsafePointer<ProtobufCMessageDescriptor>,
        options: JSONEncodingOptions
    ) -> [UInt8] {
        var printer = ProtoJSONPrinter(options: options)
        printer.out.reserveCapacity(256)
        printer.printMessage(message, descriptor)
        return printer.out
    }

    /// Decodes `bytes` (through ``DecodePipeline``) and prints the message as UTF-8 bytes.
    static func printUTF8(
        binary bytes: [UInt8],
        descriptor: _ProtobufCDescriptor,
        decoding: DecodingOptions,
        options: JSONEncodingOptions
    ) throws(IMCodecError) -> [UInt8] {
        try DecodePipeline.withMessage(descriptor, bytes, options: decoding, arena: nil) {
            (message) throws(IMCodecError) in
            // The printer recurses once per level, as the conversion to a Swift value does.
            try DecodeStack.run(depth: message.depth) {
                printUTF8(message.raw, descriptor: descriptor.pointer, options: options)
            }
        }
    }

    // MARK: Layout

    @inline(__always)
    private mutating func ascii(_ s: StaticString) {
        out.append(contentsOf: UnsafeBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    @inline(__always)
    private mutating func ascii(_ s: String) {
        out.append(contentsOf: s.utf8)
    }

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

    private mutating func printMessage(
        _ message: UnsafeRawPointer,
        _ descriptor: UnsafePointer<ProtobufCMessageDescriptor>
    ) {
        let info = descriptors.info(descriptor)
        open(UInt8(ascii: "{"))
        var first = true
        for field in info.fields {
            if field.isRepeated {
                let count = message.load(fromByteOffset: field.quantifierOffset, as: Int.self)
                guard count > 0, let array = message.load(fromByteOffset: field.offset, as: UnsafeRawPointer?.self)
                else {
                    continue
                }
                beginItem(&first)
                key(protoNames ? field.protoName : field.jsonName)
                if field.isMap {
                    printMap(field, array, count)
                } else {
                    open(UInt8(ascii: "["))
                    var firstElement = true
                    for index in 0..<count {
                        beginItem(&firstElement)
                        printValue(array + index * field.value.size, field.value)
                    }
                    close(UInt8(ascii: "]"), empty: false)
                }
                continue
            }
            guard isPresent(field, in: message) else { continue }
            beginItem(&first)
            key(protoNames ? field.protoName : field.jsonName)
            printValue(message + field.offset, field.value)
        }
        close(UInt8(ascii: "}"), empty: first)
    }

    /// Whether a singular field is printed: set oneof members, present sub-messages, and proto3
    /// scalars whose bits are not all zero (so -0.0 is printed; it is not the default).
    private func isPresent(_ field: ProtoJSONField, in message: UnsafeRawPointer) -> Bool {
        if field.isOneof {
            return message.load(fromByteOffset: field.quantifierOffset, as: UInt32.self) == field.number
        }
        let value = message + field.offset
        switch field.value.type {
        case PROTOBUF_C_TYPE_MESSAGE:
            return value.load(as: UnsafeRawPointer?.self) != nil
        case PROTOBUF_C_TYPE_STRING:
            guard let string = value.load(as: UnsafePointer<CChar>?.self) else { return false }
            return field.label == PROTOBUF_C_LABEL_NONE ? string.pointee != 0 : true
        default:
            break
        }
        switch field.label {
        case PROTOBUF_C_LABEL_REQUIRED:
            return true
        case PROTOBUF_C_LABEL_OPTIONAL:
            return message.load(fromByteOffset: field.quantifierOffset, as: Int32.self) != 0
        default:
            break
        }
        switch field.value.size {
        case 4: return value.load(as: UInt32.self) != 0
        case 8: return value.load(as: UInt64.self) != 0
        default: return value.load(as: ProtobufCBinaryData.self).len != 0  // bytes
        }
    }

    // MARK: Values

    private mutating func printValue(_ value: UnsafeRawPointer, _ kind: ProtoJSONValueKind) {
        switch kind.type {
        case PROTOBUF_C_TYPE_INT32, PROTOBUF_C_TYPE_SINT32, PROTOBUF_C_TYPE_SFIXED32:
            ascii(String(value.load(as: Int32.self)))
        case PROTOBUF_C_TYPE_UINT32, PROTOBUF_C_TYPE_FIXED32:
            ascii(String(value.load(as: UInt32.self)))
        case PROTOBUF_C_TYPE_INT64, PROTOBUF_C_TYPE_SINT64, PROTOBUF_C_TYPE_SFIXED64:
            out.append(UInt8(ascii: "\""))
            ascii(String(value.load(as: Int64.self)))
            out.append(UInt8(ascii: "\""))
        case PROTOBUF_C_TYPE_UINT64, PROTOBUF_C_TYPE_FIXED64:
            out.append(UInt8(ascii: "\""))
            ascii(String(value.load(as: UInt64.self)))
            out.append(UInt8(ascii: "\""))
        case PROTOBUF_C_TYPE_FLOAT:
            printFloatingPoint(ProtoJSONNumberFormat.shortestFloat(value.load(as: Float.self)))
        case PROTOBUF_C_TYPE_DOUBLE:
            printFloatingPoint(value.load(as: Double.self))
        case PROTOBUF_C_TYPE_BOOL:
            if value.load(as: Int32.self) != 0 { ascii("true") } else { ascii("false") }
        case PROTOBUF_C_TYPE_ENUM:
            let number = value.load(as: Int32.self)
            if let enumeration = kind.enumeration, let known = protobuf_c_enum_descriptor_get_value(enumeration, number)
            {
                out.append(UInt8(ascii: "\""))
                out.append(
                    contentsOf: UnsafeRawBufferPointer(start: known.pointee.name, count: strlen(known.pointee.name))
                )
                out.append(UInt8(ascii: "\""))
            } else {
                ascii(String(number))
            }
        case PROTOBUF_C_TYPE_STRING:
            if let string = value.load(as: UnsafePointer<CChar>?.self) {
                writeString(
                    UnsafeBufferPointer(
                        start: UnsafeRawPointer(string).assumingMemoryBound(to: UInt8.self),
                        count: strlen(string)
                    )
                )
            } else {
                ascii("\"\"")
            }
        case PROTOBUF_C_TYPE_BYTES:
            let data = value.load(as: ProtobufCBinaryData.self)
            let bytes = UnsafeBufferPointer(
                start: data.len > 0 ? data.data : nil,
                count: data.data == nil ? 0 : data.len
            )
            if kind.isUTF8Bytes {
                writeString(bytes)
            } else {
                out.append(UInt8(ascii: "\""))
                Base64.encode(bytes, into: &out)
                out.append(UInt8(ascii: "\""))
            }
        case PROTOBUF_C_TYPE_MESSAGE:
            if let sub = value.load(as: UnsafeRawPointer?.self), let descriptor = kind.message {
                printMessage(sub, descriptor)
            } else {
                ascii("{}")  // a map entry without its message value: the default instance
            }
        default:
            ascii("null")
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

    /// A map as an object: entries sorted by key (strings bytewise, numbers by value); a key that
    /// repeats on the wire keeps its last value, as protobuf specifies.
    private mutating func printMap(_ field: ProtoJSONField, _ array: UnsafeRawPointer, _ count: Int) {
        guard let keyKind = field.mapKey, let valueKind = field.mapValue else { return }
        var items: [MapItem] = []
        items.reserveCapacity(count)
        for index in 0..<count {
            let entry = array.load(
                fromByteOffset: index * MemoryLayout<UnsafeRawPointer>.size,
                as: UnsafeRawPointer?.self
            )
            items.append(
                MapItem(key: MapKey(entry.map { $0 + field.mapKeyOffset }, keyKind), index: index, entry: entry)
            )
        }
        items.sort { a, b in a.key == b.key ? a.index < b.index : a.key < b.key }
        open(UInt8(ascii: "{"))
        var first = true
        for position in items.indices {
            let item = items[position]
            if position + 1 < items.count && items[position + 1].key == item.key { continue }
            beginItem(&first)
            switch item.key {
            case .text(let bytes): writeString(bytes)
            case .signed(let value): ascii("\"\(value)\"")
            case .unsigned(let value): ascii("\"\(value)\"")
            case .bool(let value): ascii(value ? "\"true\"" : "\"false\"")
            }
            out.append(UInt8(ascii: ":"))
            if pretty { out.append(UInt8(ascii: " ")) }
            if let entry = item.entry {
                printValue(entry + field.mapValueOffset, valueKind)
            } else {
                printDefault(valueKind)
            }
        }
        close(UInt8(ascii: "}"), empty: first)
    }

    private mutating func printDefault(_ kind: ProtoJSONValueKind) {
        withUnsafeTemporaryAllocation(byteCount: 16, alignment: 16) { zero in
            zero.initializeMemory(as: UInt8.self, repeating: 0)
            printValue(UnsafeRawPointer(zero.baseAddress!), kind)
        }
    }

    private struct MapItem {
        let key: MapKey
        let index: Int
        let entry: UnsafeRawPointer?
    }

    /// A map key read from its entry (string keys point into the protobuf-c message).
    private enum MapKey: Comparable {
        case text(UnsafeBufferPointer<UInt8>)
        case signed(Int64)
        case unsigned(UInt64)
        case bool(Bool)

        init(_ pointer: UnsafeRawPointer?, _ kind: ProtoJSONValueKind) {
            guard let pointer else {
                switch kind.type {
                case PROTOBUF_C_TYPE_STRING, PROTOBUF_C_TYPE_BYTES:
                    self = .text(UnsafeBufferPointer(start: nil, count: 0))
                case PROTOBUF_C_TYPE_BOOL: self = .bool(false)
                default: self = .unsigned(0)
                }
                return
            }
            switch kind.type {
            case PROTOBUF_C_TYPE_STRING:
                let string = pointer.load(as: UnsafePointer<CChar>?.self)
                self = .text(
                    UnsafeBufferPointer(
                        start: UnsafeRawPointer(string)?.assumingMemoryBound(to: UInt8.self),
                        count: string.map { strlen($0) } ?? 0
                    )
                )
            case PROTOBUF_C_TYPE_BYTES:
                let data = pointer.load(as: ProtobufCBinaryData.self)
                self = .text(UnsafeBufferPointer(start: data.data, count: data.data == nil ? 0 : data.len))
            case PROTOBUF_C_TYPE_INT32, PROTOBUF_C_TYPE_SINT32, PROTOBUF_C_TYPE_SFIXED32:
                self = .signed(Int64(pointer.load(as: Int32.self)))
            case PROTOBUF_C_TYPE_INT64, PROTOBUF_C_TYPE_SINT64, PROTOBUF_C_TYPE_SFIXED64:
                self = .signed(pointer.load(as: Int64.self))
            case PROTOBUF_C_TYPE_UINT32, PROTOBUF_C_TYPE_FIXED32:
                self = .unsigned(UInt64(pointer.load(as: UInt32.self)))
            case PROTOBUF_C_TYPE_UINT64, PROTOBUF_C_TYPE_FIXED64:
                self = .unsigned(pointer.load(as: UInt64.self))
            case PROTOBUF_C_TYPE_BOOL:
                self = .bool(pointer.load(as: Int32.self) != 0)
            default:
                self = .unsigned(0)
            }
        }

        /// Bytewise order of two texts: memcmp of the common prefix, then the shorter first.
        private static func compare(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Int {
            let common = min(a.count, b.count)
            if common > 0, let pa = a.baseAddress, let pb = b.baseAddress {
                let result = memcmp(pa, pb, common)
                if result != 0 { return Int(result) }
            }
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

/// Number text as Google's Python implementation writes it.
enum ProtoJSONNumberFormat {
    /// Python's `repr(float)`: the shortest digits that round-trip, in fixed notation when the
    /// decimal exponent is in -4 ..< 16 (`0.0001`, `1000000000000000.0`, `1.0`), else scientific
    /// with a signed exponent of at least two digits (`1e-05`, `1e+16`, `1.5e+300`). `value` is finite.
    static func pythonRepr(_ value: Double) -> String {
        // Swift's description has the same shortest round-trip digits; only the layout differs.
        var digits: [UInt8] = []
        var pointPosition: Int? = nil  // digits before the '.'
        var exponent = 0
        let negative = value.sign == .minus
        let text = Array(value.magnitude.description.utf8)
        var i = 0
        while i < text.count {
            let c = text[i]
            if c == UInt8(ascii: ".") {
                pointPosition = digits.count
            } else if c == UInt8(ascii: "e") || c == UInt8(ascii: "E") {
                exponent = Int(String(decoding: text[(i + 1)...], as: UTF8.self)) ?? 0
                break
            } else if c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") {
                digits.append(c)
            }
            i += 1
        }
        // value = 0.DIGITS × 10^decimalPoint
        var decimalPoint = (pointPosition ?? digits.count) + exponent
        while let first = digits.first, first == UInt8(ascii: "0") {
            digits.removeFirst()
            decimalPoint -= 1
        }
        while let last = digits.last, last == UInt8(ascii: "0") { digits.removeLast() }
        var result = negative ? "-" : ""
        if digits.isEmpty { return result + "0.0" }
        let d = String(decoding: digits, as: UTF8.self)
        if decimalPoint <= -4 || decimalPoint > 16 {
            result += String(d.first!)
            if digits.count > 1 { result += "." + d.dropFirst() }
            let e = decimalPoint - 1
            result += e < 0 ? "e-" : "e+"
            let magnitude = String(abs(e))
            result += (magnitude.count < 2 ? "0" : "") + magnitude
        } else if decimalPoint <= 0 {
            result += "0." + String(repeating: "0", count: -decimalPoint) + d
        } else if decimalPoint >= digits.count {
            result += d + String(repeating: "0", count: decimalPoint - digits.count) + ".0"
        } else {
            result += d.prefix(decimalPoint) + "." + d.dropFirst(decimalPoint)
        }
        return result
    }

    /// Python protobuf's `ToShortestFloat`: the double nearest the `%.{p}g` text of a float, for the
    /// smallest p >= 6 whose text reads back as the same float.
    static func shortestFloat(_ value: Float) -> Double {
        let original = Double(value)
        guard original.isFinite else { return original }
        for precision in 6...17 {
            let rounded = formatG(original, precision: precision)
            if Float(rounded) == value { return rounded }
        }
        return original
    }

    /// `Double("%.{precision}g" of value)`, correctly rounded by the C library.
    private static func formatG(_ value: Double, precision: Int) -> Double {
        var buffer = [CChar](repeating: 0, count: 64)
        let written = buffer.withUnsafeMutableBufferPointer { out in
            withVaList([Int32(precision), value]) { vsnprintf(out.baseAddress, out.count, "%.*g", $0) }
        }
        guard written > 0 else { return value }
        return buffer.withUnsafeBufferPointer { Double(String(cString: $0.baseAddress!)) } ?? value
    }
}

/// RFC 4648 base64 (implementation detail of the JSON mapping of `bytes`).
enum Base64 {
    private static let alphabet: [UInt8] = Array(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8
    )

    /// Appends the standard, padded encoding of `bytes`.
    static func encode(_ bytes: UnsafeBufferPointer<UInt8>, into out: inout [UInt8]) {
        out.reserveCapacity(out.count + (bytes.count + 2) / 3 * 4)
        var i = 0
        while i + 3 <= bytes.count {
            let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            out.append(alphabet[Int(v >> 18 & 63)])
            out.append(alphabet[Int(v >> 12 & 63)])
            out.append(alphabet[Int(v >> 6 & 63)])
            out.append(alphabet[Int(v & 63)])
            i += 3
        }
        let rest = bytes.count - i
        if rest == 1 {
            let v = UInt32(bytes[i]) << 16
            out.append(alphabet[Int(v >> 18 & 63)])
            out.append(alphabet[Int(v >> 12 & 63)])
            out.append(UInt8(ascii: "="))
            out.append(UInt8(ascii: "="))
        } else if rest == 2 {
            let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
            out.append(alphabet[Int(v >> 18 & 63)])
            out.append(alphabet[Int(v >> 12 & 63)])
            out.append(alphabet[Int(v >> 6 & 63)])
            out.append(UInt8(ascii: "="))
        }
    }

    /// Decodes standard (`+/`) or URL-safe (`-_`) base64, padded or not (bits left over after the
    /// last whole byte are ignored, as Google's decoders do); otherwise the index of the first bad
    /// character.
    static func decode(_ text: ArraySlice<UInt8>) -> Result<[UInt8], DecodeError> {
        var end = text.endIndex
        var padding = 0
        while end > text.startIndex && text[end - 1] == UInt8(ascii: "=") && padding < 2 {
            end -= 1
            padding += 1
        }
        let length = end - text.startIndex
        var out: [UInt8] = []
        out.reserveCapacity(length * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        var index = text.startIndex
        while index < end {
            let c = text[index]
            let v: UInt32
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): v = UInt32(c - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): v = UInt32(c - UInt8(ascii: "a") + 26)
            case UInt8(ascii: "0")...UInt8(ascii: "9"): v = UInt32(c - UInt8(ascii: "0") + 52)
            case UInt8(ascii: "+"), UInt8(ascii: "-"): v = 62
            case UInt8(ascii: "/"), UInt8(ascii: "_"): v = 63
            default:
                return .failure(
                    DecodeError(index: index - text.startIndex, reason: "a character outside the base64 alphabets")
                )
            }
            accumulator = accumulator << 6 | v
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
            index += 1
        }
        if padding > 0 && (length + padding) % 4 != 0 {
            return .failure(DecodeError(index: length, reason: "padding '=' that does not fill a group of 4"))
        }
        if length % 4 == 1 {
            return .failure(DecodeError(index: length, reason: "a length that no byte sequence encodes to"))
        }
        return .success(out)
    }

    struct DecodeError: Error {
        let index: Int
        let reason: String
    }
}
