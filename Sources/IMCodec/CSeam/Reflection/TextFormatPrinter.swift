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

/// Prints canonical protobuf wire bytes as protobuf text format, exactly as protoc's
/// `--decode` (Google's C++ `TextFormat::Printer`) prints them (implementation detail of
/// ``IMCodecMessage/textFormatString(options:)``).
///
/// It walks the bytes ``IMCodecMessage/serializedBytes()`` writes, looking fields up in
/// protobuf-c's descriptors. Those bytes already hold what the C++ printer shows, in its order:
/// fields in number order, proto3 defaults left out (but -0.0, set oneof members and present
/// sub-messages kept), map entries sorted by key bytes with both key and value written, unknown
/// fields last. The walk keeps an explicit stack, never recursion, so it prints values of any depth
/// and cannot fail.
///
///     schema_version: 1                         scalar: name, ": ", value
///     message {                                 message: name, " {", its fields indented by 2, "}"
///       client_msg_id: "c\344\275\240"          string / bytes: C-escaped, octal for non-ASCII
///       conversation {
///         type: CONVERSATION_TYPE_GROUP         enum: its name (a number when the schema has none)
///       }
///       23: 5                                   unknown field: by number (see printUnknownField)
///     }
struct TextFormatPrinter {
    private var out: [UInt8] = []
    private var indent = 0
    private let printUnknownFields: Bool

    /// How deep protoc looks into an unknown length-delimited field that parses as a message
    /// (C++ `kUnknownFieldRecursionLimit`).
    static let unknownFieldRecursionLimit = 10

    private init(printUnknownFields: Bool) {
        self.printUnknownFields = printUnknownFields
    }

    /// Prints the canonical wire bytes of one message of type `descriptor`.
    static func print(
        canonical bytes: [UInt8],
        descriptor: UnsafePointer<ProtobufCMessageDescriptor>,
        options: TextFormatEncodingOptions
    ) -> String {
        var printer = TextFormatPrinter(printUnknownFields: options.printUnknownFields)
        printer.out.reserveCapacity(bytes.count * 2 + 16)
        bytes.withUnsafeBufferPointer { printer.printMessage($0, descriptor) }
        return String(decoding: printer.out, as: UTF8.self)
    }

    /// Prints unknown fields' wire bytes (whole fields, as ``UnknownFields`` holds them) by number,
    /// one per line, as ``printUnknownField(_:_:end:budget:)`` does inside a message.
    static func printUnknownFields(_ bytes: [UInt8]) -> String {
        var printer = TextFormatPrinter(printUnknownFields: true)
        bytes.withUnsafeBufferPointer { buffer in
            var i = 0
            while i < buffer.count {
                let budget = unknownFieldRecursionLimit
                if !printer.printUnknownField(buffer, &i, end: buffer.count, budget: budget) { break }
            }
        }
        return String(decoding: printer.out, as: UTF8.self)
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

    private mutating func beginLine() {
        out.append(contentsOf: repeatElement(UInt8(ascii: " "), count: indent * 2))
    }

    private mutating func name(_ field: UnsafePointer<ProtobufCFieldDescriptor>) {
        beginLine()
        out.append(contentsOf: UnsafeRawBufferPointer(start: field.pointee.name, count: strlen(field.pointee.name)))
    }

    // MARK: Messages

    /// Prints every field of the message whose canonical bytes are `bytes`.
    private mutating func printMessage(
        _ bytes: UnsafeBufferPointer<UInt8>,
        _ top: UnsafePointer<ProtobufCMessageDescriptor>
    ) {
        // The open messages: their descriptor and where their bytes end.
        var stack: [(descriptor: UnsafePointer<ProtobufCMessageDescriptor>, end: Int)] = [(top, bytes.count)]
        var i = 0
        while let frame = stack.last {
            if i >= frame.end {
                stack.removeLast()
                if stack.isEmpty { break }
                indent -= 1
                beginLine()
                ascii("}\n")
                continue
            }
            let fieldStart = i
            guard let tag = WireFormat.readVarint(bytes, &i, end: frame.end) else { break }  // never: our own bytes
            let number = UInt32(truncatingIfNeeded: tag >> 3)
            let wireType = UInt8(tag & 7)
            guard let field = protobuf_c_message_descriptor_get_field(frame.descriptor, number),
                let expected = TextFormatPrinter.wireType(of: field.pointee.type)
            else {
                i = fieldStart
                printUnknownOrSkip(bytes, &i, end: frame.end)
                continue
            }
            if wireType == expected {
                if field.pointee.type == PROTOBUF_C_TYPE_MESSAGE,
                    let sub = field.pointee.descriptor?.assumingMemoryBound(to: ProtobufCMessageDescriptor.self)
                {
                    guard let length = WireFormat.readVarint(bytes, &i, end: frame.end) else { break }
                    name(field)
                    ascii(" {\n")
                    indent += 1
                    stack.append((sub, i + Int(length)))
                    continue
                }
                name(field)
                ascii(": ")
                printValue(bytes, &i, end: frame.end, field)
                out.append(0x0A)
            } else if wireType == 2 && field.pointee.label == PROTOBUF_C_LABEL_REPEATED && expected != 2 {
                // A packed repeated scalar: one line per element, as the C++ printer shows them.
                guard let length = WireFormat.readVarint(bytes, &i, end: frame.end) else { break }
                let end = i + Int(length)
                while i < end {
                    name(field)
                    ascii(": ")
                    printValue(bytes, &i, end: end, field)
                    out.append(0x0A)
                }
            } else {
                i = fieldStart
                printUnknownOrSkip(bytes, &i, end: frame.end)
            }
        }
    }

    /// The wire type a field of `type` has when not packed.
    private static func wireType(of type: ProtobufCType) -> UInt8? {
        switch type {
        case PROTOBUF_C_TYPE_INT32, PROTOBUF_C_TYPE_SINT32, PROTOBUF_C_TYPE_UINT32, PROTOBUF_C_TYPE_INT64,
            PROTOBUF_C_TYPE_SINT64, PROTOBUF_C_TYPE_UINT64, PROTOBUF_C_TYPE_BOOL, PROTOBUF_C_TYPE_ENUM:
            0
        case PROTOBUF_C_TYPE_FIXED64, PROTOBUF_C_TYPE_SFIXED64, PROTOBUF_C_TYPE_DOUBLE:
            1
        case PROTOBUF_C_TYPE_STRING, PROTOBUF_C_TYPE_BYTES, PROTOBUF_C_TYPE_MESSAGE:
            2
        case PROTOBUF_C_TYPE_FIXED32, PROTOBUF_C_TYPE_SFIXED32, PROTOBUF_C_TYPE_FLOAT:
            5
        default:
            nil
        }
    }

    /// Reads one value of `field` at `i` and prints it as the C++ printer does.
    private mutating func printValue(
        _ bytes: UnsafeBufferPointer<UInt8>,
        _ i: inout Int,
        end: Int,
        _ field: UnsafePointer<ProtobufCFieldDescriptor>
    ) {
        let type = field.pointee.type
        switch type {
        case PROTOBUF_C_TYPE_FIXED64, PROTOBUF_C_TYPE_SFIXED64, PROTOBUF_C_TYPE_DOUBLE:
            let raw = WireFormat.readFixed(UInt64.self, bytes, &i, end: end) ?? 0
            switch type {
            case PROTOBUF_C_TYPE_FIXED64: ascii(String(raw))
            case PROTOBUF_C_TYPE_SFIXED64: ascii(String(Int64(bitPattern: raw)))
            default: ascii(TextFormatNumbers.double(Double(bitPattern: raw)))
            }
        case PROTOBUF_C_TYPE_FIXED32, PROTOBUF_C_TYPE_SFIXED32, PROTOBUF_C_TYPE_FLOAT:
            let raw = WireFormat.readFixed(UInt32.self, bytes, &i, end: end) ?? 0
            switch type {
            case PROTOBUF_C_TYPE_FIXED32: ascii(String(raw))
            case PROTOBUF_C_TYPE_SFIXED32: ascii(String(Int32(bitPattern: raw)))
            default: ascii(TextFormatNumbers.float(Float(bitPattern: raw)))
            }
        case PROTOBUF_C_TYPE_STRING, PROTOBUF_C_TYPE_BYTES:
            let length = Int(WireFormat.readVarint(bytes, &i, end: end) ?? 0)
            let value = UnsafeBufferPointer(rebasing: bytes[i..<min(i + length, end)])
            i += value.count
            writeQuoted(value)
        default:
            let raw = WireFormat.readVarint(bytes, &i, end: end) ?? 0
            switch type {
            case PROTOBUF_C_TYPE_INT32: ascii(String(Int32(truncatingIfNeeded: raw)))
            case PROTOBUF_C_TYPE_SINT32:
                let v = UInt32(truncatingIfNeeded: raw)
                ascii(String(Int32(bitPattern: (v >> 1) ^ (0 &- (v & 1)))))
            case PROTOBUF_C_TYPE_UINT32: ascii(String(UInt32(truncatingIfNeeded: raw)))
            case PROTOBUF_C_TYPE_INT64: ascii(String(Int64(bitPattern: raw)))
            case PROTOBUF_C_TYPE_SINT64: ascii(String(Int64(bitPattern: (raw >> 1) ^ (0 &- (raw & 1)))))
            case PROTOBUF_C_TYPE_BOOL: if raw != 0 { ascii("true") } else { ascii("false") }
            case PROTOBUF_C_TYPE_ENUM:
                let number = Int32(truncatingIfNeeded: raw)
                if let enumeration = field.pointee.descriptor?.assumingMemoryBound(to: ProtobufCEnumDescriptor.self),
                    let known = protobuf_c_enum_descriptor_get_value(enumeration, number)
                {
                    let valueName: UnsafePointer<CChar> = known.pointee.name
                    out.append(contentsOf: UnsafeRawBufferPointer(start: valueName, count: strlen(valueName)))
                } else {
                    ascii(String(number))
                }
            default: ascii(String(raw))  // uint64
            }
        }
    }

    // MARK: Unknown fields

    /// Prints (or, when unknown fields are not printed, skips) the unknown field at `i`.
    private mutating func printUnknownOrSkip(_ bytes: UnsafeBufferPointer<UInt8>, _ i: inout Int, end: Int) {
        if printUnknownFields {
            if !printUnknownField(bytes, &i, end: end, budget: TextFormatPrinter.unknownFieldRecursionLimit) { i = end }
        } else if !WireReader.skipField(bytes, &i, end: end, groupBudget: Int.max) {
            i = end
        }
    }

    /// Prints the field at `i` by number, as C++ `TextFormat::Printer::PrintUnknownFields` does:
    /// a varint in decimal (unsigned), fixed32 and fixed64 as `0x` and 8 or 16 hex digits, a
    /// length-delimited value as a nested `N { ... }` block when it is non-empty and parses as
    /// protobuf fields (within the recursion budget), else as a C-escaped string, a group as a
    /// nested block. Returns false when the bytes are not a field (never for a value's own bytes).
    private mutating func printUnknownField(
        _ bytes: UnsafeBufferPointer<UInt8>,
        _ i: inout Int,
        end: Int,
        budget: Int
    ) -> Bool {
        guard let tag = WireFormat.readVarint(bytes, &i, end: end) else { return false }
        let number = tag >> 3
        beginLine()
        ascii(String(number))
        switch tag & 7 {
        case 0:
            guard let value = WireFormat.readVarint(bytes, &i, end: end) else { return false }
            ascii(": ")
            ascii(String(value))
        case 1:
            guard let value = WireFormat.readFixed(UInt64.self, bytes, &i, end: end) else { return false }
            ascii(": 0x")
            hex(value, digits: 16)
        case 5:
            guard let value = WireFormat.readFixed(UInt32.self, bytes, &i, end: end) else { return false }
            ascii(": 0x")
            hex(UInt64(value), digits: 8)
        case 2:
            guard let length = WireFormat.readVarint(bytes, &i, end: end), length <= UInt64(end - i) else {
                return false
            }
            let valueEnd = i + Int(length)
            if length > 0 && budget > 0 && WireReader.isMessage(bytes, from: i, to: valueEnd, groupBudget: budget) {
                ascii(" {\n")
                indent += 1
                while i < valueEnd {
                    if !printUnknownField(bytes, &i, end: valueEnd, budget: budget - 1) { break }
                }
                indent -= 1
                beginLine()
                ascii("}")
            } else {
                ascii(": ")
                writeQuoted(UnsafeBufferPointer(rebasing: bytes[i..<valueEnd]))
            }
            i = valueEnd
        case 3:
            ascii(" {\n")
            indent += 1
            while true {
                let before = i
                guard let inner = WireFormat.readVarint(bytes, &i, end: end) else { return false }
                if inner & 7 == 4 { break }  // the group's end tag
                i = before
                if !printUnknownField(bytes, &i, end: end, budget: budget - 1) { return false }
            }
            indent -= 1
            beginLine()
            ascii("}")
        default:
            return false
        }
        out.append(0x0A)
        return true
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    private mutating func hex(_ value: UInt64, digits: Int) {
        for shift in stride(from: (digits - 1) * 4, through: 0, by: -4) {
            out.append(TextFormatPrinter.hexDigits[Int(value >> UInt64(shift) & 0xF)])
        }
    }

    // MARK: Strings

    /// `"…"` with C++ `CEscape`: `\n`, `\r`, `\t`, `\"`, `\'`, `\\`, and every other byte outside
    /// printable ASCII (0x20-0x7E) as a three-digit octal escape, so UTF-8 text shows as octal.
    private mutating func writeQuoted(_ value: UnsafeBufferPointer<UInt8>) {
        out.append(UInt8(ascii: "\""))
        for byte in value {
            switch byte {
            case 0x0A: ascii("\\n")
            case 0x0D: ascii("\\r")
            case 0x09: ascii("\\t")
            case UInt8(ascii: "\""): ascii("\\\"")
            case UInt8(ascii: "'"): ascii("\\'")
            case UInt8(ascii: "\\"): ascii("\\\\")
            case 0x20..<0x7F: out.append(byte)
            default:
                out.append(UInt8(ascii: "\\"))
                out.append(UInt8(ascii: "0") + (byte >> 6))
                out.append(UInt8(ascii: "0") + (byte >> 3 & 7))
                out.append(UInt8(ascii: "0") + (byte & 7))
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}

/// Number text as Google's C++ runtime writes it in text format.
enum TextFormatNumbers {
    /// C++ `SimpleDtoa`: `%.15g`, or `%.17g` when that does not read back as the same double;
    /// `inf`, `-inf`, `nan`.
    static func double(_ value: Double) -> String {
        if value.isNaN { return "nan" }
        if value.isInfinite { return value < 0 ? "-inf" : "inf" }
        let short = format(value, precision: 15)
        if strtod(short, nil) == value { return short }
        return format(value, precision: 17)
    }

    /// C++ `SimpleFtoa`: `%.6g`, or `%.9g` when that does not read back as the same float.
    static func float(_ value: Float) -> String {
        if value.isNaN { return "nan" }
        if value.isInfinite { return value < 0 ? "-inf" : "inf" }
        let short = format(Double(value), precision: 6)
        if strtof(short, nil) == value { return short }
        return format(Double(value), precision: 9)
    }

    private static func format(_ value: Double, precision: Int32) -> String {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { buffer in
            let written = withVaList([precision, value]) { vsnprintf(buffer.baseAddress, 64, "%.*g", $0) }
            guard written > 0 else { return String(value) }
            return String(cString: buffer.baseAddress!)
        }
    }
}

/// Whole fields as C++ `UnknownFieldSet::ParseFromString` reads them (the primitives are
/// ``WireFormat``'s; bounds-checked: false when the bytes are not a field).
enum WireReader {
    /// Skips the field at `i` (groups nested at most `groupBudget` deep); false when it is not one.
    static func skipField(_ bytes: UnsafeBufferPointer<UInt8>, _ i: inout Int, end: Int, groupBudget: Int) -> Bool {
        guard let tag = WireFormat.readVarint(bytes, &i, end: end), tag <= UInt64(UInt32.max), tag >> 3 != 0 else {
            return false
        }
        switch tag & 7 {
        case 0: return WireFormat.readVarint(bytes, &i, end: end) != nil
        case 1: return WireFormat.readFixed(UInt64.self, bytes, &i, end: end) != nil
        case 5: return WireFormat.readFixed(UInt32.self, bytes, &i, end: end) != nil
        case 2:
            guard let length = WireFormat.readVarint(bytes, &i, end: end), length <= UInt64(Int32.max),
                length <= UInt64(end - i)
            else { return false }
            i += Int(length)
            return true
        case 3:
            guard groupBudget > 0 else { return false }
            while true {
                let before = i
                guard let inner = WireFormat.readVarint(bytes, &i, end: end) else { return false }
                if inner & 7 == 4 { return inner >> 3 == tag >> 3 }
                i = before
                if !skipField(bytes, &i, end: end, groupBudget: groupBudget - 1) { return false }
            }
        default:
            return false
        }
    }

    /// Whether `bytes[from..<to]` is a sequence of whole fields, as C++ `UnknownFieldSet::ParseFromString`
    /// decides it (field number 0, wire types 6 and 7, a stray end-group tag and truncation fail).
    static func isMessage(_ bytes: UnsafeBufferPointer<UInt8>, from: Int, to end: Int, groupBudget: Int) -> Bool {
        var i = from
        while i < end {
            if !skipField(bytes, &i, end: end, groupBudget: groupBudget) { return false }
        }
        return true
    }
}
