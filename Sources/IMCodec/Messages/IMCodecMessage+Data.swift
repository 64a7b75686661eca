// Foundation `Data` entry points, as swift-protobuf spells them. On Linux the library imports only
// FoundationEssentials (which holds `Data`), not all of Foundation.
#if canImport(FoundationEssentials)
public import FoundationEssentials
#elseif canImport(Foundation)
public import Foundation
#endif

#if canImport(FoundationEssentials) || canImport(Foundation)
extension IMCodecMessage {
    /// Encodes the message to canonical protobuf wire bytes in a `Data`: the bytes of
    /// ``serializedBytes()``, copied once from the encoder's buffer. Encoding cannot fail.
    /// - Returns: Google's deterministic serialization of the message.
    public func serializedData() -> Data {
        withUnsafeTemporaryAllocation(byteCount: 1024, alignment: 16) { scratch in
            var writer = _WireWriter(scratch: scratch)
            _encode(to: &writer)
            return writer.withBytes { Data($0) }
        }
    }

    /// Decodes a message from protobuf wire bytes in a `Data`, read in place (no copy when the
    /// `Data` is contiguous, as it always is on Apple platforms and in swift-foundation).
    ///
    /// The same decoder as ``init(serializedBytes:options:)-([UInt8],_)``: limits checked first,
    /// then protobuf-c.
    /// - Parameters:
    ///   - serializedData: The wire bytes of exactly one message.
    ///   - options: Limits for hostile input.
    /// - Throws: ``IMCodecError`` with the code of the first problem and its byte offset.
    public init(serializedData: Data, options: DecodingOptions = DecodingOptions()) throws(IMCodecError) {
        try self.init(serializedBytes: serializedData, options: options)
    }

    /// Merges a message's wire bytes in a `Data` into this value; see
    /// ``merge(serializedBytes:options:)``.
    /// - Parameters:
    ///   - serializedData: The wire bytes of exactly one message of this type.
    ///   - options: Limits for hostile input.
    /// - Throws: ``IMCodecError`` with the code of the first problem and its byte offset; the value
    ///   is then unchanged.
    public mutating func merge(
        serializedData: Data,
        options: DecodingOptions = DecodingOptions()
    ) throws(IMCodecError) {
        try merge(serializedBytes: serializedData, options: options)
    }

    /// Prints the message as canonical proto3 JSON, as the UTF-8 bytes of
    /// ``jsonString(options:)``.
    /// - Parameters:
    ///   - options: The layout and naming of the JSON.
    /// - Throws: ``IMCodecError`` as ``jsonString(options:)`` does (nesting deeper than
    ///   ``DecodingOptions/maxDepthCap``).
    public func jsonUTF8Data(options: JSONEncodingOptions = JSONEncodingOptions()) throws(IMCodecError) -> Data {
        Data(try _jsonUTF8Bytes(options: options))
    }

    /// Reads a message from proto3 JSON given as UTF-8 bytes, parsed in place (never through a
    /// `String`); accepts what ``init(jsonString:options:)`` accepts.
    /// - Parameters:
    ///   - jsonUTF8Data: One JSON object, UTF-8 encoded (no byte order mark).
    ///   - options: Unknown-field handling and limits for hostile input.
    /// - Throws: ``IMCodecError`` as ``init(jsonString:options:)`` does, and
    ///   ``IMCodecError/Code/invalidUTF8`` with the offset of the first byte that is not UTF-8.
    public init(jsonUTF8Data: Data, options: JSONDecodingOptions = JSONDecodingOptions()) throws(IMCodecError) {
        self = try withContiguousBytes(jsonUTF8Data) { (buffer) throws(IMCodecError) -> Self in
            try Self(_jsonUTF8: buffer, options: options)
        }
    }
}
#endif
