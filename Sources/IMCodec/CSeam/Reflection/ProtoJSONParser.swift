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

/// Reads proto3 JSON into a protobuf-c message allocated in an ``Arena``, which the generated
/// `init(_protobufCMessage:)` then copies into a Swift value (implementation detail of
/// ``IMCodecMessage/init(jsonString:options:)``).
///
///     JSON text ──JSONTokenizer──▶ JSONTape ──ProtoJSONParser──▶ protobuf-c message ──▶ Swift value
///
/// What it accepts follows Google's parsers (the proto3 JSON spec): json names and schema names;
/// `null` for a field means its default; integers from JSON numbers or strings holding a JSON
/// number, exponent and fraction forms allowed when the value is integral (`1e2`, `100.0`),
/// range-checked; floating point from numbers, numeric strings, `"NaN"`, `"Infinity"`,
/// `"-Infinity"`; bytes from standard or URL-safe base64, padded or not; enums by name or number;
/// maps as objects. It rejects unknown fields (unless ignored), a field given twice (even under
/// both names), two members of one oneof, wrong JSON types, out-of-range numbers, bad base64, and
/// anything that is not strict JSON.
struct ProtoJSONParser {
    private let tape: JSONTape
    private let arena: Arena
    private let options: JSONDecodingOptions
    private let maxDepth: Int
    private let descriptors = ProtoJSONDescriptors()

    private init(tape: JSONTape, arena: Arena, options: JSONDecodingOptions, maxDepth: Int) {
        self.tape = tape
        self.arena = arena
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
        // The parser builds the protobuf-c message in an arena the pipeline makes and caps; the
        // parser and the conversion recurse once per message level (at most once per JSON level).
        return try DecodePipeline.withParsed(
            M._protobufCDescriptor,
            inputSize: size,
            depth: tape.deepest + 1,
            acceptsNewerFrames: options.acceptsNewerFrames,
            build: { (arena) throws(IMCodecError) in
                let parser = ProtoJSONParser(tape: tape, arena: arena, options: options, maxDepth: maxDepth)
                return try parser.parseMessage(node: 0, M._protobufCDescriptor.pointer, depth: 1)
            },
            { M(_protobufCMessage: $0) }
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

    private static func describe(_ field: ProtoJSONField, of info: ProtoJSONMessageInfo) -> String {
        "field \"\(field.protoNameString)\" of \(info.fullName)"
    }

    // MARK: Messages

    private func newMessage(
        _ descriptor: UnsafePointer<ProtobufCMessageDescriptor>
    ) throws(IMCodecError) -> UnsafeMutableRawPointer {
        let memory = try arena.allocate(descriptor.pointee.sizeof_message)
        protobuf_c_message_init(descriptor, memory)
        return memory
    }

    /// Allocates and fills a message from the object at `node`.
    private func parseMessage(
        node: Int,
        _ descriptor: UnsafePointer<ProtobufCMessageDescriptor>,
        depth: Int
    ) throws(IMCodecError) -> UnsafeMutableRawPointer {
        let info = descriptors.info(descriptor)
        guard depth <= maxDepth else {
            throw IMCodecError(
                code: .tooDeep,
                reason: "messages nest deeper than maxDepth (\(maxDepth)) at \(info.fullName)",
                offset: tape.nodes[node].offset
            )
        }
        guard tape.nodes[node].kind == .object else {
            throw error("expected an object for \(info.fullName), found \(show(node))", node: node)
        }
        let message = try newMessage(descriptor)
        var seen = [Bool](repeating: false, count: info.fields.count)
        var oneofsSet: [(quantifierOffset: Int, field: Int)] = []
        var ignoredKeys = Set<ArraySlice<UInt8>>()
        var child = node + 1
        let end = tape.nodes[node].b
        while child < end {
            let keyNode = child
            let valueNode = child + 1
            child = tape.next(after: valueNode)
            let key = tape.bytes(keyNode)
            guard let index = info.field(named: key) else {
                guard options.ignoreUnknownFields else {
                    throw error("\(info.fullName) has no field named \(show(keyNode))", node: keyNode)
                }
                guard ignoredKeys.insert(key).inserted else {
                    throw error("duplicate key \(show(keyNode)) in an object of \(info.fullName)", node: keyNode)
                }
                continue
            }
            let field = info.fields[index]
            guard !seen[index] else {
                throw error(
                    "\(ProtoJSONParser.describe(field, of: info)) appears twice (json name \"\(String(decoding: field.jsonName, as: UTF8.self))\", schema name \"\(field.protoNameString)\")",
                    node: keyNode
                )
            }
            seen[index] = true
            let isNull = tape.nodes[valueNode].kind == .null
            if field.isOneof && !isNull {
                if let other = oneofsSet.first(where: { $0.quantifierOffset == field.quantifierOffset }) {
                    throw error(
                        "\(ProtoJSONParser.describe(field, of: info)) and field \"\(info.fields[other.field].protoNameString)\" are members of the same oneof; at most one may be set",
                        node: keyNode
                    )
                }
                oneofsSet.append((field.quantifierOffset, index))
            }
            if isNull { continue }  // null is the field's default
            try parseField(field, of: info, node: valueNode, into: message, depth: depth)
        }
        return message
    }

    private func parseField(
        _ field: ProtoJSONField,
        of info: ProtoJSONMessageInfo,
        node: Int,
        into message: UnsafeMutableRawPointer,
        depth: Int
    ) throws(IMCodecError) {
        if field.isMap {
            try parseMap(field, of: info, node: node, into: message, depth: depth)
            return
        }
        if field.isRepeated {
            guard tape.nodes[node].kind == .array else {
                throw error(
                    "\(ProtoJSONParser.describe(field, of: info)) is repeated: expected an array, found \(show(node))",
                    node: node
                )
            }
            let count = tape.nodes[node].a
            let size = field.value.size
            let array = try arena.allocate(max(count, 1) * size)
            var stored = 0
            var element = node + 1
            for _ in 0..<count {
                if tape.nodes[element].kind == .null {
                    throw error(
                        "null is not allowed as an element of repeated \(ProtoJSONParser.describe(field, of: info))",
                        node: element
                    )
                }
                if try parseValue(
                    field.value,
                    node: element,
                    into: array + stored * size,
                    depth: depth,
                    context: { ProtoJSONParser.describe(field, of: info) }
                ) {
                    stored += 1
                }
                element = tape.next(after: element)
            }
            message.storeBytes(of: stored, toByteOffset: field.quantifierOffset, as: Int.self)
            message.storeBytes(
                of: stored > 0 ? array : nil,
                toByteOffset: field.offset,
                as: UnsafeMutableRawPointer?.self
            )
            return
        }
        guard
            try parseValue(
                field.value,
                node: node,
                into: message + field.offset,
                depth: depth,
                context: { ProtoJSONParser.describe(field, of: info) }
            )
        else {
            return  // an enum name this schema does not know, skipped under ignoreUnknownFields
        }
        if field.isOneof {
            message.storeBytes(of: field.number, toByteOffset: field.quantifierOffset, as: UInt32.self)
        } else if field.label == PROTOBUF_C_LABEL_OPTIONAL && field.value.type != PROTOBUF_C_TYPE_MESSAGE
            && field.value.type != PROTOBUF_C_TYPE_STRING
        {
            message.storeBytes(of: 1, toByteOffset: field.quantifierOffset, as: Int32.self)  // has_<field>
        }
    }

    private func parseMap(
        _ field: ProtoJSONField,
        of info: ProtoJSONMessageInfo,
        node: Int,
        into message: UnsafeMutableRawPointer,
        depth: Int
    ) throws(IMCodecError) {
        guard let entryDescriptor = field.mapEntry, let keyKind = field.mapKey, let valueKind = field.mapValue else {
            return
        }
        guard tape.nodes[node].kind == .object else {
            throw error(
                "\(ProtoJSONParser.describe(field, of: info)) is a map: expected an object, found \(show(node))",
                node: node
            )
        }
        let count = tape.nodes[node].a
        let pointerSize = MemoryLayout<UnsafeMutableRawPointer>.size
        let array = try arena.allocate(max(count, 1) * pointerSize)
        var stored = 0
        var keys = Set<ArraySlice<UInt8>>(minimumCapacity: count)
        var child = node + 1
        for _ in 0..<count {
            let keyNode = child
            let valueNode = child + 1
            child = tape.next(after: valueNode)
            let key = tape.bytes(keyNode)
            guard keys.insert(key).inserted else {
                throw error(
                    "duplicate key \(show(keyNode)) in map \(ProtoJSONParser.describe(field, of: info))",
                    node: keyNode
                )
            }
            if tape.nodes[valueNode].kind == .null {
                throw error(
                    "null is not allowed as a value of map \(ProtoJSONParser.describe(field, of: info))",
                    node: valueNode
                )
            }
            let entry = try newMessage(entryDescriptor)
            try parseMapKey(
                keyKind,
                node: keyNode,
                into: entry + field.mapKeyOffset,
                context: { ProtoJSONParser.describe(field, of: info) }
            )
            if try parseValue(
                valueKind,
                node: valueNode,
                into: entry + field.mapValueOffset,
                depth: depth,
                context: { ProtoJSONParser.describe(field, of: info) }
            ) {
                array.storeBytes(of: entry, toByteOffset: stored * pointerSize, as: UnsafeMutableRawPointer.self)
                stored += 1
            }
        }
        message.storeBytes(of: stored, toByteOffset: field.quantifierOffset, as: Int.self)
        message.storeBytes(of: stored > 0 ? array : nil, toByteOffset: field.offset, as: UnsafeMutableRawPointer?.self)
    }

    /// A map key: always a JSON string, holding the text of the key's type.
    private func parseMapKey(
        _ kind: ProtoJSONValueKind,
        node: Int,
        into destination: UnsafeMutableRawPointer,
        context: () -> String
    ) throws(IMCodecError) {
        switch kind.type {
        case PROTOBUF_C_TYPE_STRING, PROTOBUF_C_TYPE_BYTES:
            try storeText(kind, tape.bytes(node), node: node, into: destination, context: context)
        case PROTOBUF_C_TYPE_BOOL:
            let key = tape.bytes(node)
            if key.elementsEqual("true".utf8) {
                destination.storeBytes(of: 1, as: Int32.self)
            } else if key.elementsEqual("false".utf8) {
                destination.storeBytes(of: 0, as: Int32.self)
            } else {
                throw error("map key \(show(node)) of \(context()) is not \"true\" or \"false\"", node: node)
            }
        default:
            try storeInteger(kind, tape.bytes(node), node: node, into: destination, context: context)
        }
    }

    // MARK: Values

    /// Stores the value at `node` (not null) into `destination`, a slot of `kind`. Returns false
    /// when the value is skipped (an unknown enum name under ignoreUnknownFields).
    private func parseValue(
        _ kind: ProtoJSONValueKind,
        node: Int,
        into destination: UnsafeMutableRawPointer,
        depth: Int,
        context: () -> String
    ) throws(IMCodecError) -> Bool {
        let jsonKind = tape.nodes[node].kind
        switch kind.type {
        case PROTOBUF_C_TYPE_MESSAGE:
            guard let descriptor = kind.message else { return false }
            guard jsonKind == .object else {
                throw error(
                    "\(context()) is a message (\(kind.typeName)): expected an object, found \(show(node))",
                    node: node
                )
            }
            let sub = try parseMessage(node: node, descriptor, depth: depth + 1)
            destination.storeBytes(of: sub, as: UnsafeMutableRawPointer.self)
        case PROTOBUF_C_TYPE_STRING, PROTOBUF_C_TYPE_BYTES:
            guard jsonKind == .string else {
                throw error("\(context()) is a \(kind.typeName): expected a string, found \(show(node))", node: node)
            }
            if kind.type == PROTOBUF_C_TYPE_BYTES && !kind.isUTF8Bytes {
                switch Base64.decode(tape.bytes(node)) {
                case .success(let bytes):
                    try storeBinary(bytes[...], into: destination)
                case .failure(let failure):
                    throw .invalidJSON(
                        "\(context()) is bytes: invalid base64 (\(failure.reason))",
                        offset: tape.nodes[node].offset + 1 + failure.index
                    )
                }
            } else {
                try storeText(kind, tape.bytes(node), node: node, into: destination, context: context)
            }
        case PROTOBUF_C_TYPE_BOOL:
            switch jsonKind {
            case .true: destination.storeBytes(of: 1, as: Int32.self)
            case .false: destination.storeBytes(of: 0, as: Int32.self)
            default: throw error("\(context()) is a bool: expected true or false, found \(show(node))", node: node)
            }
        case PROTOBUF_C_TYPE_FLOAT, PROTOBUF_C_TYPE_DOUBLE:
            let value = try floatingPoint(kind, node: node, context: context)
            if kind.type == PROTOBUF_C_TYPE_FLOAT {
                destination.storeBytes(of: Float(value), as: Float.self)
            } else {
                destination.storeBytes(of: value, as: Double.self)
            }
        case PROTOBUF_C_TYPE_ENUM:
            return try parseEnum(kind, node: node, into: destination, context: context)
        default:
            guard jsonKind == .number || jsonKind == .string else {
                throw error(
                    "\(context()) is an \(kind.typeName): expected a number or a numeric string, found \(show(node))",
                    node: node
                )
            }
            try storeInteger(kind, tape.bytes(node), node: node, into: destination, context: context)
        }
        return true
    }

    private func parseEnum(
        _ kind: ProtoJSONValueKind,
        node: Int,
        into destination: UnsafeMutableRawPointer,
        context: () -> String
    ) throws(IMCodecError) -> Bool {
        let jsonKind = tape.nodes[node].kind
        if jsonKind == .string, let enumeration = kind.enumeration {
            let name = tape.bytes(node)
            for index in 0..<Int(enumeration.pointee.n_values) {
                let value = enumeration.pointee.values[index]
                if strlen(value.name) == name.count,
                    UnsafeRawBufferPointer(start: value.name, count: name.count).elementsEqual(name)
                {
                    destination.storeBytes(of: value.value, as: Int32.self)
                    return true
                }
            }
            if !JSONNumber.isNumber(name) {
                if options.ignoreUnknownFields { return false }
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
            destination.storeBytes(
                of: negative ? Int32(truncatingIfNeeded: 0 &- magnitude) : Int32(magnitude),
                as: Int32.self
            )
            return true
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
        _ kind: ProtoJSONValueKind,
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
        if kind.type == PROTOBUF_C_TYPE_FLOAT && value.magnitude > Double(Float.greatestFiniteMagnitude) {
            throw error("\(context()) is a float: \(show(node)) is out of the float range", node: node)
        }
        return value
    }

    /// An integer of the slot's type from the text of a JSON number (or a string holding one).
    private func storeInteger(
        _ kind: ProtoJSONValueKind,
        _ text: ArraySlice<UInt8>,
        node: Int,
        into destination: UnsafeMutableRawPointer,
        context: () -> String
    ) throws(IMCodecError) {
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
        func outOfRange() -> IMCodecError {
            error("\(context()) is an \(kind.typeName): \(show(node)) is out of range", node: node)
        }
        switch kind.type {
        case PROTOBUF_C_TYPE_INT32, PROTOBUF_C_TYPE_SINT32, PROTOBUF_C_TYPE_SFIXED32:
            guard negative ? magnitude <= 1 << 31 : magnitude < 1 << 31 else { throw outOfRange() }
            destination.storeBytes(of: Int32(truncatingIfNeeded: negative ? 0 &- magnitude : magnitude), as: Int32.self)
        case PROTOBUF_C_TYPE_INT64, PROTOBUF_C_TYPE_SINT64, PROTOBUF_C_TYPE_SFIXED64:
            guard negative ? magnitude <= 1 << 63 : magnitude < 1 << 63 else { throw outOfRange() }
            destination.storeBytes(of: Int64(truncatingIfNeeded: negative ? 0 &- magnitude : magnitude), as: Int64.self)
        case PROTOBUF_C_TYPE_UINT32, PROTOBUF_C_TYPE_FIXED32:
            guard !negative || magnitude == 0, magnitude <= UInt64(UInt32.max) else { throw outOfRange() }
            destination.storeBytes(of: UInt32(magnitude), as: UInt32.self)
        case PROTOBUF_C_TYPE_UINT64, PROTOBUF_C_TYPE_FIXED64:
            guard !negative || magnitude == 0 else { throw outOfRange() }
            destination.storeBytes(of: magnitude, as: UInt64.self)
        default:
            throw error("\(context()) has a type the JSON mapping does not support", node: node)
        }
    }

    /// A `string` value: a ProtobufCBinaryData (every string in IMCodec's generated C, map keys and
    /// values included), or a NUL-terminated C string for a PROTOBUF_C_TYPE_STRING field.
    private func storeText(
        _ kind: ProtoJSONValueKind,
        _ text: ArraySlice<UInt8>,
        node: Int,
        into destination: UnsafeMutableRawPointer,
        context: () -> String
    ) throws(IMCodecError) {
        if kind.type == PROTOBUF_C_TYPE_BYTES {
            try storeBinary(text, into: destination)
            return
        }
        if let nul = text.firstIndex(of: 0) {
            throw .unsupported(
                "\(context()) holds U+0000, which protobuf-c cannot keep in a map key or value (a C string)",
                offset: tape.nodes[node].offset + 1 + (nul - text.startIndex)
            )
        }
        let memory = try arena.allocate(text.count + 1)
        if !text.isEmpty { text.withUnsafeBytes { memory.copyMemory(from: $0.baseAddress!, byteCount: $0.count) } }
        memory.storeBytes(of: 0, toByteOffset: text.count, as: UInt8.self)
        destination.storeBytes(
            of: UnsafeMutablePointer<CChar>(memory.assumingMemoryBound(to: CChar.self)),
            as: UnsafeMutablePointer<CChar>.self
        )
    }

    private func storeBinary(_ bytes: ArraySlice<UInt8>, into destination: UnsafeMutableRawPointer) throws(IMCodecError)
    {
        var data = ProtobufCBinaryData(len: 0, data: nil)
        if !bytes.isEmpty {
            let memory = try arena.allocate(bytes.count)
            bytes.withUnsafeBytes { memory.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            data = ProtobufCBinaryData(len: bytes.count, data: memory.assumingMemoryBound(to: UInt8.self))
        }
        destination.storeBytes(of: data, as: ProtobufCBinaryData.self)
    }
}

/// UTF-8 validation of bytes that do not come from a Swift string.
enum UTF8Check {
    /// The offset of the first byte of the first ill-formed sequence (RFC 3629), or nil when all
    /// of `buffer` is valid UTF-8: the pre-scan's validator (Sources/CIMCodecRuntime/prescan.c)
    /// finds both in one pass.
    static func firstInvalidOffset(_ buffer: UnsafeRawBufferPointer) -> Int? {
        guard let base = buffer.baseAddress, !buffer.isEmpty else { return nil }
        let bad = imcodec_utf8_first_invalid(base.assumingMemoryBound(to: UInt8.self), buffer.count)
        return bad == buffer.count ? nil : bad
    }
}
