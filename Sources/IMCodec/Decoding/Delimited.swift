/// Google's delimited format: each message preceded by its length as a varint. It is how IMCodec
/// frames travel on a stream (`imcodec decode --delimited`, IMCodecNIO).
///
///     +--------------+---------------+--------------+---------------+---
///     | varint len 1 | message 1     | varint len 2 | message 2     | ...
///     +--------------+---------------+--------------+---------------+---
public enum Delimited {
    /// Appends `message` with its length prefix.
    public static func append<M: IMCodecMessage>(_ message: M, to bytes: inout [UInt8]) {
        let body = message.serializedBytes()
        WireFormat.appendVarint(UInt64(body.count), to: &bytes)
        bytes.append(contentsOf: body)
    }

    /// `messages`, each with its length prefix.
    public static func serialize<M: IMCodecMessage>(_ messages: [M]) -> [UInt8] {
        var bytes: [UInt8] = []
        for message in messages { append(message, to: &bytes) }
        return bytes
    }

    /// Reads the length prefix at the start of `buffer`.
    /// - Parameters:
    ///   - buffer: Bytes received so far.
    ///   - maxLength: The largest message length accepted.
    /// - Returns: The message length and the prefix size, or `nil` when more bytes are needed.
    /// - Throws: ``IMCodecError`` `malformed` for a prefix longer than 10 bytes (Google's delimited
    ///   readers, C++'s included, read a padded one up to 10) or above 2^32-1, `tooLarge` for a
    ///   length above `maxLength`.
    public static func readLengthPrefix(
        _ buffer: UnsafeRawBufferPointer,
        maxLength: Int
    ) throws(IMCodecError)
        -> (length: Int, prefixSize: Int)?
    {
        var index = 0
        var value: UInt64 = 0
        var count = 0
        switch WireFormat.continueVarint(buffer, &index, end: buffer.count, value: &value, count: &count) {
        case .truncated:
            return nil
        case .overlong:
            throw .malformed("length prefix longer than 10 bytes", offset: 0)
        case .complete:
            guard value <= UInt64(UInt32.max) else {
                throw .malformed("length prefix above 2^32-1", offset: 0)
            }
            guard value <= UInt64(max(maxLength, 0)) else {
                throw .tooLarge("a \(value)-byte frame is announced; the limit is \(maxLength)", offset: 0)
            }
            return (Int(value), count)
        }
    }

    /// Appends an already encoded record with its length prefix.
    public static func appendRecord(_ record: [UInt8], to bytes: inout [UInt8]) {
        WireFormat.appendVarint(UInt64(record.count), to: &bytes)
        bytes.append(contentsOf: record)
    }

    /// Splits a complete delimited byte string into its records, without decoding them.
    public struct RecordReader {
        private let bytes: [UInt8]
        private let maxLength: Int
        private var position = 0

        /// Creates a reader over `bytes` that accepts records of at most `maxLength` bytes.
        public init(_ bytes: [UInt8], maxLength: Int) {
            self.bytes = bytes
            self.maxLength = maxLength
        }

        /// Byte offset of the next record's length prefix.
        public var offset: Int { position }

        /// The byte range of the next record's body, or `nil` at the end of the input.
        /// - Throws: ``IMCodecError`` for a bad or oversize prefix, or a record cut short.
        public mutating func next() throws(IMCodecError) -> Range<Int>? {
            if position == bytes.count { return nil }
            let start = position
            let maxLength = maxLength
            let prefix = try bytes.withUnsafeBytes { raw in
                Result { () throws(IMCodecError) in
                    try Delimited.readLengthPrefix(
                        UnsafeRawBufferPointer(rebasing: raw[start...]),
                        maxLength: maxLength
                    )
                }
            }.mapError { IMCodecError(code: $0.code, reason: $0.reason, offset: start) }.get()
            guard let prefix else { throw .truncated("the input ends inside a length prefix", offset: start) }
            let bodyStart = start + prefix.prefixSize
            guard prefix.length <= bytes.count - bodyStart else {
                throw .truncated("a \(prefix.length)-byte record runs past the end of the input", offset: bodyStart)
            }
            position = bodyStart + prefix.length
            return bodyStart..<position
        }
    }

    /// Iterates over the messages of a complete delimited byte string.
    public struct Reader<M: IMCodecMessage> {
        private let bytes: [UInt8]
        private let options: DecodingOptions
        private var records: RecordReader

        /// Creates a reader over `bytes`, decoding each message with `options`
        /// (`maxInputSize` also caps each announced length).
        public init(_ bytes: [UInt8], options: DecodingOptions = DecodingOptions()) {
            self.bytes = bytes
            self.options = options
            records = RecordReader(bytes, maxLength: options.maxInputSize)
        }

        /// Byte offset of the next record.
        public var offset: Int { records.offset }

        /// The next message, or `nil` at the end of the input.
        /// - Throws: ``IMCodecError`` for a bad prefix, a record cut short, or a message that does
        ///   not decode; offsets are relative to the start of the whole input.
        public mutating func next() throws(IMCodecError) -> M? {
            guard let range = try records.next() else { return nil }
            do {
                return try M(serializedBytes: bytes[range], options: options)
            } catch {
                throw IMCodecError(
                    code: error.code,
                    reason: error.reason,
                    offset: error.offset.map { $0 + range.lowerBound }
                )
            }
        }
    }
}
