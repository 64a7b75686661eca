/// A message of the IMCodec schema (Schemas/imcodec/v1): a Swift value that encodes to and decodes
/// from protobuf wire bytes through protobuf-c.
///
/// Every generated type (``Frame``, ``Message``, ``MessageElement``, ...) conforms. `debugDescription`
/// (and so `print` and `debugPrint`) shows the message in protobuf text format.
///
/// What users call comes from extensions: ``init(serializedBytes:options:)-([UInt8],_)``,
/// ``serializedBytes()``, ``with(_:)``, ``merge(serializedBytes:options:)``, and the JSON and
/// text-format members. The hooks the generated code implements for them are on
/// `_IMCodecMessageImplementation`, an implementation detail.
public protocol IMCodecMessage: _IMCodecMessageImplementation, Sendable, Hashable, CustomDebugStringConvertible {
    /// Creates a message with every field at its default.
    init()

    /// The message's full name in the schema, e.g. `imcodec.v1.Frame`.
    static var protoMessageName: String { get }

    /// Fields read from the wire that this schema does not know; written back on encode.
    var unknownFields: UnknownFields { get set }
}

/// Implementation detail of the generated code: the hooks through which ``IMCodecMessage``'s
/// methods decode and encode a generated type. Do not conform to it or call its members.
///
/// Kept apart from ``IMCodecMessage`` (as swift-protobuf keeps its generated code's hooks on
/// `_MessageImplementationBase`) so that the public protocol lists only what users call. It is the
/// protocol ``IMCodecMessage`` refines, not one that refines it, so that every generic API written
/// against `M: IMCodecMessage` reaches the hooks through the witness table, with no dynamic cast.
public protocol _IMCodecMessageImplementation {
    /// The protobuf-c descriptor of the message.
    static var _protobufCDescriptor: _ProtobufCDescriptor { get }
    /// Copies a protobuf-c message into a Swift value.
    init(_protobufCMessage: _ProtobufCMessage)
    /// Writes the message's fields, back to front (see `_WireWriter`).
    func _encode(to writer: inout _WireWriter)
}

extension IMCodecMessage {
    /// Creates a message and lets `populator` fill it in, as in swift-protobuf:
    /// `let text = TextElement.with { $0.text = "hi" }`.
    public static func with(_ populator: (inout Self) throws -> Void) rethrows -> Self {
        var message = Self()
        try populator(&message)
        return message
    }

    /// Decodes a message from protobuf wire bytes.
    ///
    /// The bytes are checked against `options` (size, nesting depth, field count, UTF-8 of every
    /// string, well-formed tags and lengths) before protobuf-c parses them.
    /// - Parameters:
    ///   - serializedBytes: The wire bytes of exactly one message.
    ///   - options: Limits for hostile input.
    /// - Throws: ``IMCodecError`` with the code of the first problem and its byte offset.
    @inlinable
    public init(serializedBytes: [UInt8], options: DecodingOptions = DecodingOptions()) throws(IMCodecError) {
        self = try DecodePipeline.decode(Self.self, serializedBytes, options: options, arena: nil)
    }

    /// Decodes a message from any collection of bytes (`Data`, `ArraySlice<UInt8>`, ...); see
    /// ``init(serializedBytes:options:)-([UInt8],_)``.
    /// - Throws: ``IMCodecError`` with the code of the first problem and its byte offset.
    @inlinable
    public init<Bytes: Collection>(
        serializedBytes: Bytes,
        options: DecodingOptions = DecodingOptions()
    )
        throws(IMCodecError) where Bytes.Element == UInt8
    {
        self = try DecodePipeline.decode(Self.self, serializedBytes, options: options, arena: nil)
    }

    /// Encodes the message to canonical protobuf wire bytes: fields in number order, map entries
    /// sorted by the UTF-8 of their keys, proto3 defaults omitted (but -0.0 kept), unknown fields
    /// last — the bytes Google's deterministic serializer writes. Encoding cannot fail.
    @inlinable
    public func serializedBytes() -> [UInt8] {
        // One allocation, exactly sized, for every message. Encode into a stack buffer (1 KiB, the
        // most the standard library always places on the stack) and copy out. A larger message
        // overflows it, and the writer then only counts: that pass gave the exact size, so the
        // message is encoded again, straight into an array of that size.
        withUnsafeTemporaryAllocation(byteCount: 1024, alignment: 16) { scratch in
            var writer = _WireWriter(sizing: scratch)
            _encode(to: &writer)
            if _fastPath(!writer.overflowed) { return writer.bytes }
            return _WireWriter.bytes(count: writer.count) { _encode(to: &$0) }
        }
    }
}

extension IMCodecMessage {
    /// Merges a message's wire bytes into this value, as protobuf defines it and swift-protobuf
    /// names it: the result is what decoding this value's bytes followed by `serializedBytes`
    /// gives (scalars: the last one wins; repeated fields and unknown fields: appended;
    /// sub-messages: merged recursively; a oneof: the same member merges, another replaces it;
    /// maps: the last value per key).
    ///
    /// `options` limits `serializedBytes` (errors carry offsets into it), which is checked before
    /// anything is decoded; on any error the value is unchanged.
    /// - Parameters:
    ///   - serializedBytes: The wire bytes of exactly one message of this type.
    ///   - options: Limits for hostile input.
    /// - Throws: ``IMCodecError`` with the code of the first problem and its byte offset.
    public mutating func merge<Bytes: Collection>(
        serializedBytes: Bytes,
        options: DecodingOptions = DecodingOptions()
    ) throws(IMCodecError) where Bytes.Element == UInt8 {
        let joined = try WireCodec.mergeInput(
            Self._protobufCDescriptor,
            own: self.serializedBytes(),
            merging: serializedBytes,
            options: options
        )
        self = try Self(serializedBytes: joined.bytes, options: joined.options)
    }
}
