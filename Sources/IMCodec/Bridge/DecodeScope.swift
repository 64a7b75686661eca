import CIMCodecRuntime
import CProtobufC

/// One decode's arena and the protobuf-c message in it (implementation detail of
/// ``IMCodecMessage/init(serializedBytes:options:)-([UInt8],_)``): the arena lives as long as the
/// scope, so the message can be converted to a Swift value, specialized in the caller's module,
/// before both go away.
public final class _DecodeScope {
    private let arena: _Arena
    @usableFromInline let message: _ProtobufCMessage

    @usableFromInline
    init(_ descriptor: _ProtobufCDescriptor, _ bytes: [UInt8], options: DecodingOptions) throws(IMCodecError) {
        var failure: IMCodecError?
        let made: (_Arena, _ProtobufCMessage)? = bytes.withUnsafeBytes { raw in
            do throws(IMCodecError) {
                return try Self.unpack(descriptor, raw, options: options)
            } catch {
                failure = error
                return nil
            }
        }
        guard let made else { throw failure ?? .malformed("the input could not be read") }
        (arena, message) = made
    }

    @usableFromInline
    init<Bytes: Collection>(_ descriptor: _ProtobufCDescriptor, _ bytes: Bytes, options: DecodingOptions)
    throws(IMCodecError) where Bytes.Element == UInt8 {
        (arena, message) = try withContiguousBytes(bytes) { (raw) throws(IMCodecError) in
            try Self.unpack(descriptor, raw, options: options)
        }
    }

    private static func unpack(_ descriptor: _ProtobufCDescriptor, _ buffer: UnsafeRawBufferPointer, options: DecodingOptions)
    throws(IMCodecError) -> (_Arena, _ProtobufCMessage) {
        let scan = try WireCodec.scan(descriptor, buffer, options: options)
        // With the estimate: one block that holds everything protobuf-c will allocate. Without
        // (the input is too short to pass the limit): a block that usually suffices.
        let arena = try _Arena(
            firstBlockSize: scan.estimated != 0
                ? max(scan.arena_bytes, 256) : min(max(buffer.count * 4, 1 << 10), 64 << 10))
        return (arena, try WireCodec.unpack(descriptor, buffer, scan: scan, options: options, arena: arena))
    }
}
