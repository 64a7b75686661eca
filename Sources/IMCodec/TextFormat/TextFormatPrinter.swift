/// Prints canonical protobuf wire bytes as protobuf text format, exactly as protoc's
/// `--decode` (Google's C++ `TextFormat::Printer`) prints them (implementation detail of
/// ``IMCodecMessage/textFormatString(options:)``).
///
/// It walks the bytes ``IMCodecMessage/serializedBytes()`` writes, looking fields up in the
/// ``MessageSchema`` model. Those bytes already hold what the C++ printer shows, in its order:
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

    /// Prints the canonical wire bytes of one message of type `schema`.
    static func print(
        canonical bytes: [UInt8],
        schema: MessageSchema,
        options: TextFormatEncodingOptions
    ) -> String {
        var printer = TextFormatPrinter(printUnknownFields: options.printUnknownFields)
        printer.out.reserveCapacity(bytes.count * 2 + 16)
        bytes.withUnsafeBufferPointer { printer.printMessage($0, schema) }
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
    private mutating func ascii(_ s: StaticString) { out.append(ascii: s) }

    @inline(__always)
    private mutating func ascii(_ s: String) { out.append(contentsOf: s.utf8) }

    private mutating func beginLine() {
        out.append(contentsOf: repeatElement(UInt8(ascii: " "), count: indent * 2))
    }

    private mutating func name(_ field: FieldSchema) {
        beginLine()
        out.append(contentsOf: field.name)
    }

    // MARK: Messages

    /// Prints every field of the message whose canonical bytes are `bytes`.
    private mutating func printMessage(_ bytes: UnsafeBufferPointer<UInt8>, _ top: MessageSchema) {
        // The open messages outside the current one: their schema and where their bytes end.
        var stack: [(schema: MessageSchema, end: Int)] = []
        var schema = top
        var end = bytes.count
        var i = 0
        while true {
            if i >= end {
                guard let outer = stack.popLast() else { break }
                (schema, end) = outer
                indent -= 1
                beginLine()
                ascii("}\n")
                continue
            }
            let fieldStart = i
            guard let tag = WireFormat.readVarint(bytes, &i, end: end) else { break }  // never: our own bytes
            let wireType = UInt8(tag & 7)
            guard let index = schema.field(number: UInt32(truncatingIfNeeded: tag >> 3)) else {
                i = fieldStart
                printUnknownOrSkip(bytes, &i, end: end)
                continue
            }
            let field = schema.fields[index]
            let expected = field.value.kind.wireType
            if wireType == expected {
                if field.value.kind == .message, let sub = field.value.message {
                    guard let length = WireFormat.readVarint(bytes, &i, end: end) else { break }
                    name(field)
                    ascii(" {\n")
                    indent += 1
                    stack.append((schema, end))
                    (schema, end) = (sub, i + Int(length))
                    continue
                }
                name(field)
                ascii(": ")
                printValue(bytes, &i, end: end, field)
                out.append(0x0A)
            } else if wireType == 2 && field.isRepeated && expected != 2 {
                // A packed repeated scalar: one line per element, as the C++ printer shows them.
                guard let length = WireFormat.readVarint(bytes, &i, end: end) else { break }
                let recordEnd = i + Int(length)
                while i < recordEnd {
                    name(field)
                    ascii(": ")
                    printValue(bytes, &i, end: recordEnd, field)
                    out.append(0x0A)
                }
            } else {
                i = fieldStart
                printUnknownOrSkip(bytes, &i, end: end)
            }
        }
    }

    /// Reads one value of `field` at `i` and prints it as the C++ printer does.
    private mutating func printValue(
        _ bytes: UnsafeBufferPointer<UInt8>,
        _ i: inout Int,
        end: Int,
        _ field: FieldSchema
    ) {
        let kind = field.value.kind
        switch kind.readValue(bytes, &i, end: end) {
        case .signed(let number):
            if kind == .enumeration, let name = field.value.enumeration?.name(of: Int32(truncatingIfNeeded: number)) {
                out.append(contentsOf: name)
            } else {
                ascii(String(number))
            }
        case .unsigned(let number): ascii(String(number))
        case .float(let number): ascii(TextFormatNumbers.float(number))
        case .double(let number): ascii(TextFormatNumbers.double(number))
        case .bool(let flag): if flag { ascii("true") } else { ascii("false") }
        case .bytes(let range): writeQuoted(UnsafeBufferPointer(rebasing: bytes[range]))
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
