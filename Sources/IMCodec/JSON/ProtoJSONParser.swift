/// Reads proto3 JSON into protobuf wire bytes, which the one decode pipeline then decodes into a
/// Swift value (implementation detail of ``IMCodecMessage/init(jsonString:options:)``).
///
///     JSON text ──JSONTokenizer──▶ JSONTape ──ProtoJSONParser──▶ wire bytes ──decode pipeline──▶ value
///
/// Fields are looked up by name in the ``MessageSchema`` model. What it accepts follows Google's
/// parsers (the proto3 JSON spec): json names and schema names;
/// `null` for a field means its default; integers from JSON numbers or strings holding a JSON
/// number, exponent and fraction forms allowed when the value is integral (`1e2`, `100.0`),
/// range-checked; floating point from numbers, numeric strings, `"NaN"`, `"Infinity"`,
/// `"-Infinity"`; bytes from standard or URL-safe base64, padded or not; enums by name or number;
/// maps as objects. It rejects unknown fields (unless ignored), a field given twice (even under
/// both names), two members of one oneof, wrong JSON types, out-of-range numbers, bad base64, and
/// anything that is not strict JSON.
struct ProtoJSONParser {
    private let tape: JSONTape
    private let options: JSONDecodingOptions
    private let maxDepth: Int
    private var out: [UInt8] = []

    private init(tape: JSONTape, options: JSONDecodingOptions, maxDepth: Int) {
        self.tape = tape
        self.options = options
        self.maxDepth = maxDepth
    }

    /// Decodes one message of type `M` from JSON text.
    static func decode<M: IMCodecMessage>(
        _ type: M.Type,
        json: String,
        options: JSONDecodingOptions
    ) throws(IMCodecError) -> M {
        // A Swift string is valid UTF-8: it is not checked again.
        try withContiguousBytes(json.utf8) { (buffer) throws(IMCodecError) -> M in
            try decode(type, utf8: buffer, validated: true, options: options)
        }
    }

    /// Decodes one message of type `M` from the UTF-8 bytes of JSON text, read in place.
    /// - Parameters:
    ///   - validated: Whether the bytes are known to be valid UTF-8 (a Swift string's); when
    ///     false they are checked first (``IMCodecError/Code/invalidUTF8`` at the first bad byte).
    static func decode<M: IMCodecMessage>(
        _ type: M.Type,
        utf8 buffer: UnsafeRawBufferPointer,
        validated: Bool,
        options: JSONDecodingOptions
    ) throws(IMCodecError) -> M {
        let size = buffer.count
        try DecodingOptions.checkInputSize(size, maxInputSize: options.maxInputSize, input: "JSON text")
        if !validated, let bad = UTF8Check.firstInvalidOffset(buffer) {
            throw IMCodecError(code: .invalidUTF8, reason: "the JSON text is not valid UTF-8", offset: bad)
        }
        let maxDepth = DecodingOptions.effectiveDepth(options.maxDepth)
        // Every message level can add at most one object and one array (a repeated field or map),
        // so valid input never nests deeper than this; the tokenizer stops hostile input here.
        let tape = try JSONTokenizer.parse(buffer, maxNesting: 2 * maxDepth + 2)
        var parser = ProtoJSONParser(tape: tape, options: options, maxDepth: maxDepth)
        parser.out.reserveCapacity(size)
        // The parser recurses once per message level (at most once per JSON level).
        try DecodeStack.run(depth: tape.deepest + 1) { () throws(IMCodecError) in
            try parser.parseMessage(node: 0, M.messageSchema, depth: 1)
        }
        // The bytes are ours and nest no deeper than maxDepth (checked). The memory limit is the
        // binary decoder's default for input twice the JSON's size: the pipeline's estimate counts
        // protobuf-c's structs and the Swift value, where the JSON reader used to cap the structs
        // alone at the default for the JSON's size (a map of short strings takes about as much again
        // in the Swift value as in the structs).
        let memory = DecodingOptions().decodedMemoryLimit(forInputSize: 2 * size)
        let decoding = DecodingOptions(
            maxInputSize: .max,
            maxDepth: maxDepth,
            maxFieldCount: .max,
            maxDecodedMemory: memory,
            acceptsNewerFrames: options.acceptsNewerFrames
        )
        do {
            return try M(serializedBytes: parser.out, options: decoding)
        } catch {
            throw Self.binaryStepError(error, memory: memory, jsonSize: size)
        }
    }

    /// An error of decoding the bytes the parser wrote, as the JSON's reader reports it: without an
    /// offset (the binary decoder's points into those bytes, not into the JSON text), and a memory
    /// limit named as the JSON's (``DecodingOptions/maxDecodedMemory`` is not among its options).
    private static func binaryStepError(_ error: IMCodecError, memory: Int, jsonSize: Int) -> IMCodecError {
        guard error.code == .memoryLimitExceeded else {
            return IMCodecError(code: error.code, reason: error.reason, offset: nil)
        }
        return IMCodecError(
            code: .memoryLimitExceeded,
            reason: "the message would need more than \(memory) bytes decoded, the limit for a JSON text "
                + "of \(jsonSize) bytes (32 times its size plus 1 MiB)",
            offset: nil
        )
    }

    // MARK: Errors

    private func error(_ reason: String, node: Int) -> IMCodecError {
        .invalidJSON(reason, offset: tape.nodes[node].offset)
    }

    /// `"text"` for a string node, the number text for a number node, else the JSON type.
    private func show(_ node: Int) -> String {
        switch tape.nodes[node].kind {
        case .string:
            var text = tape.string(node)
            if text.count > 40 { text = String(text.prefix(40)) + "…" }
            return "\"\(text)\""
        case .number: return tape.string(node)
        case .true: return "true"
        case .false: return "false"
        default: return tape.typeName(node)
        }
    }

    private static func describe(_ field: FieldSchema, of schema: MessageSchema) -> String {
        "field \"\(field.nameString)\" of \(schema.fullName)"
    }

    // MARK: Messages

    /// Writes the fields of the object at `node`, a message of type `schema`.
    private mutating func parseMessage(node: Int, _ schema: MessageSchema, depth: Int) throws(IMCodecError) {
        guard depth <= maxDepth else {
            throw IMCodecError(
                code: .tooDeep,
                reason: "messages nest deeper than maxDepth (\(maxDepth)) at \(schema.fullName)",
                offset: tape.nodes[node].offset
            )
        }
        guard tape.nodes[node].kind == .object else {
            throw error("expected an object for \(schema.fullName), found \(show(node))", node: node)
        }
        var seen = [Bool](repeating: false, count: schema.fields.count)
        var oneofsSet: [(oneof: Int, field: Int)] = []
        var ignoredKeys = Set<ArraySlice<UInt8>>()
        var child = node + 1
        let end = tape.nodes[node].b
        while child < end {
            let keyNode = child
            let valueNode = child + 1
            child = tape.next(after: valueNode)
            let key = tape.bytes(keyNode)
            guard let index = schema.field(jsonName: key) else {
                guard options.ignoreUnknownFields else {
                    throw error("\(schema.fullName) has no field named \(show(keyNode))", node: keyNode)
                }
                guard ignoredKeys.insert(key).inserted else {
                    throw error("duplicate key \(show(keyNode)) in an object of \(schema.fullName)", node: keyNode)
                }
                continue
            }
            let field = schema.fields[index]
            guard !seen[index] else {
                throw error(
                    "\(Self.describe(field, of: schema)) appears twice (json name \"\(String(decoding: field.jsonName, as: UTF8.self))\", schema name \"\(field.nameString)\")",
                    node: keyNode
                )
            }
            seen[index] = true
            let isNull = tape.nodes[valueNode].kind == .null
            if let oneof = field.oneof, !isNull {
                if let other = oneofsSet.first(where: { $0.oneof == oneof }) {
                    throw error(
                        "\(Self.describe(field, of: schema)) and field \"\(schema.fields[other.field].nameString)\" are members of the same oneof; at most one may be set",
                        node: keyNode
                    )
                }
                oneofsSet.append((oneof, index))
            }
            if isNull { continue }  // null is the field's default
            try parseField(field, of: schema, node: valueNode, depth: depth)
        }
    }

    private mutating func parseField(
        _ field: FieldSchema,
        of schema: MessageSchema,
        node: Int,
        depth: Int
    ) throws(IMCodecError) {
        let context = { Self.describe(field, of: schema) }
        if let map = field.map {
            try parseMap(field.number, map, node: node, depth: depth, context: context)
            return
        }
        guard field.isRepeated else {
            // false: an enum name this schema does not know, skipped under ignoreUnknownFields
            _ = try parseValue(field.value, number: field.number, node: node, depth: depth, context: context)
            return
        }
        guard tape.nodes[node].kind == .array else {
            throw error("\(context()) is repeated: expected an array, found \(show(node))", node: node)
        }
        var element = node + 1
        for _ in 0..<tape.nodes[node].a {
            if tape.nodes[element].kind == .null {
                throw error("null is not allowed as an element of repeated \(context())", node: element)
            }
            _ = try parseValue(field.value, number: field.number, node: element, depth: depth, context: context)
            element = tape.next(after: element)
        }
    }

    /// A map's entries, each written as an entry message (key = 1, value = 2).
    private mutating func parseMap(
        _ number: UInt32,
        _ map: MapEntrySchema,
        node: Int,
        depth: Int,
        context: () -> String
    ) throws(IMCodecError) {
        guard tape.nodes[node].kind == .object else {
            throw error("\(context()) is a map: expected an object, found \(show(node))", node: node)
        }
        let count = tape.nodes[node].a
        var keys = Set<ArraySlice<UInt8>>(minimumCapacity: count)
        var child = node + 1
        for _ in 0..<count {
            let keyNode = child
            let valueNode = child + 1
            child = tape.next(after: valueNode)
            guard keys.insert(tape.bytes(keyNode)).inserted else {
                throw error("duplicate key \(show(keyNode)) in map \(context())", node: keyNode)
            }
            if tape.nodes[valueNode].kind == .null {
                throw error("null is not allowed as a value of map \(context())", node: valueNode)
            }
            let entryStart = out.count
            let entry = LengthDelimitedMark(number: number, in: &out)
            try parseMapKey(map.key, node: keyNode, context: context)
            if try parseValue(map.value, number: 2, node: valueNode, depth: depth, context: context) {
                try close(entry)
            } else {
                out.removeLast(out.count - entryStart)  // the entry is skipped with its value
            }
        }
    }

    private mutating func close(_ mark: LengthDelimitedMark) throws(IMCodecError) {
        guard mark.close(in: &out) else { throw .tooLarge("a message in the JSON text is too large") }
    }

    /// A map key (field 1 of the entry): always a JSON string, holding the text of the key's type.
    private mutating func parseMapKey(_ kind: ValueSchema, node: Int, context: () -> String) throws(IMCodecError) {
        switch kind.kind {
        case .string, .bytes:
            FieldKind.appendLengthDelimited(tape.bytes(node), number: 1, to: &out)
        case .bool:
            let key = tape.bytes(node)
            if key.elementsEqual("true".utf8) {
                kind.kind.appendInteger(1, number: 1, to: &out)
            } else if key.elementsEqual("false".utf8) {
                kind.kind.appendInteger(0, number: 1, to: &out)
            } else {
                throw error("map key \(show(node)) of \(context()) is not \"true\" or \"false\"", node: node)
            }
        default:
            let value = try integer(kind, tape.bytes(node), node: node, context: context)
            kind.kind.appendInteger(value, number: 1, to: &out)
        }
    }

    // MARK: Values

    /// Writes the value at `node` (not null), of type `kind`, as field `number`. Returns false
    /// when the value is skipped (an unknown enum name under ignoreUnknownFields).
    private mutating func parseValue(
        _ kind: ValueSchema,
        number: UInt32,
        node: Int,
        depth: Int,
        context: () -> String
    ) throws(IMCodecError) -> Bool {
        let jsonKind = tape.nodes[node].kind
        switch kind.kind {
        case .message:
            guard let message = kind.message else { return false }
            guard jsonKind == .object else {
                throw error(
                    "\(context()) is a message (\(kind.typeName)): expected an object, found \(show(node))",
                    node: node
                )
            }
            let mark = LengthDelimitedMark(number: number, in: &out)
            try parseMessage(node: node, message, depth: depth + 1)
            try close(mark)
        case .string, .bytes:
            guard jsonKind == .string else {
                throw error("\(context()) is a \(kind.typeName): expected a string, found \(show(node))", node: node)
            }
            guard kind.kind == .bytes else {
                FieldKind.appendLengthDelimited(tape.bytes(node), number: number, to: &out)
                break
            }
            switch Base64.decode(tape.bytes(node)) {
            case .success(let bytes):
                FieldKind.appendLengthDelimited(bytes, number: number, to: &out)
            case .failure(let failure):
                throw .invalidJSON(
                    "\(context()) is bytes: invalid base64 (\(failure.reason))",
                    offset: tape.nodes[node].offset + 1 + failure.index
                )
            }
        case .bool:
            switch jsonKind {
            case .true: kind.kind.appendInteger(1, number: number, to: &out)
            case .false: kind.kind.appendInteger(0, number: number, to: &out)
            default: throw error("\(context()) is a bool: expected true or false, found \(show(node))", node: node)
            }
        case .float, .double:
            kind.kind.appendFloatingPoint(
                try floatingPoint(kind, node: node, context: context),
                number: number,
                to: &out
            )
        case .enumeration:
            guard let value = try enumNumber(kind, node: node, context: context) else { return false }
            kind.kind.appendInteger(UInt64(bitPattern: Int64(value)), number: number, to: &out)
        default:
            guard jsonKind == .number || jsonKind == .string else {
                throw error(
                    "\(context()) is an \(kind.typeName): expected a number or a numeric string, found \(show(node))",
                    node: node
                )
            }
            let value = try integer(kind, tape.bytes(node), node: node, context: context)
            kind.kind.appendInteger(value, number: number, to: &out)
        }
        return true
    }

    /// An enum value by name or number; nil for a name the schema does not know under
    /// ignoreUnknownFields.
    private func enumNumber(_ kind: ValueSchema, node: Int, context: () -> String) throws(IMCodecError) -> Int32? {
        let jsonKind = tape.nodes[node].kind
        if jsonKind == .string, let enumeration = kind.enumeration {
            let name = tape.bytes(node)
            if let value = enumeration.number(named: name) { return value }
            if !JSONNumber.isNumber(name) {
                if options.ignoreUnknownFields { return nil }
                throw error("\(context()) is a \(kind.typeName): it has no value named \(show(node))", node: node)
            }
        } else if jsonKind != .number {
            throw error(
                "\(context()) is an enum (\(kind.typeName)): expected a name or a number, found \(show(node))",
                node: node
            )
        }
        // A number (proto3 enums are open: any int32 is kept).
        switch JSONNumber.integer(tape.bytes(node)) {
        case .value(let negative, let magnitude) where negative ? magnitude <= 1 << 31 : magnitude < 1 << 31:
            return negative ? Int32(truncatingIfNeeded: 0 &- magnitude) : Int32(magnitude)
        case .notIntegral:
            throw error("\(context()) is an enum (\(kind.typeName)): \(show(node)) is not an integer", node: node)
        default:
            throw error(
                "\(context()) is an enum (\(kind.typeName)): \(show(node)) is out of the int32 range",
                node: node
            )
        }
    }

    private func floatingPoint(
        _ kind: ValueSchema,
        node: Int,
        context: () -> String
    ) throws(IMCodecError) -> Double {
        let text = tape.bytes(node)
        switch tape.nodes[node].kind {
        case .number:
            break
        case .string:
            if text.elementsEqual("NaN".utf8) { return .nan }
            if text.elementsEqual("Infinity".utf8) { return .infinity }
            if text.elementsEqual("-Infinity".utf8) { return -.infinity }
            guard JSONNumber.isNumber(text) else {
                throw error(
                    "\(context()) is a \(kind.typeName): \(show(node)) is not a number, \"NaN\", \"Infinity\" or \"-Infinity\"",
                    node: node
                )
            }
        default:
            throw error(
                "\(context()) is a \(kind.typeName): expected a number or a string, found \(show(node))",
                node: node
            )
        }
        guard let value = Double(String(decoding: text, as: UTF8.self)), value.isFinite else {
            throw error(
                "\(context()) is a \(kind.typeName): \(show(node)) is out of range (use \"Infinity\" or \"-Infinity\" for infinities)",
                node: node
            )
        }
        if kind.kind == .float && value.magnitude > Double(Float.greatestFiniteMagnitude) {
            throw error("\(context()) is a float: \(show(node)) is out of the float range", node: node)
        }
        return value
    }

    /// An integer of the kind's type from the text of a JSON number (or a string holding one), as
    /// the bits ``FieldKind/appendInteger(_:number:to:)`` takes.
    private func integer(
        _ kind: ValueSchema,
        _ text: ArraySlice<UInt8>,
        node: Int,
        context: () -> String
    ) throws(IMCodecError) -> UInt64 {
        let negative: Bool
        let magnitude: UInt64
        switch JSONNumber.integer(text) {
        case .value(let n, let m):
            negative = n
            magnitude = m
        case .notANumber:
            throw error("\(context()) is an \(kind.typeName): \(show(node)) is not a number", node: node)
        case .notIntegral:
            throw error("\(context()) is an \(kind.typeName): \(show(node)) is not an integer", node: node)
        case .tooLarge:
            throw error("\(context()) is an \(kind.typeName): \(show(node)) is out of range", node: node)
        }
        let inRange: Bool
        switch kind.kind {
        case .int32, .sint32, .sfixed32: inRange = negative ? magnitude <= 1 << 31 : magnitude < 1 << 31
        case .int64, .sint64, .sfixed64: inRange = negative ? magnitude <= 1 << 63 : magnitude < 1 << 63
        case .uint32, .fixed32: inRange = (!negative || magnitude == 0) && magnitude <= UInt64(UInt32.max)
        case .uint64, .fixed64: inRange = !negative || magnitude == 0
        default:
            throw error("\(context()) has a type the JSON mapping does not support", node: node)
        }
        guard inRange else {
            throw error("\(context()) is an \(kind.typeName): \(show(node)) is out of range", node: node)
        }
        return negative ? 0 &- magnitude : magnitude
    }
}
