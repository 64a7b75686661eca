internal import CProtobufC

/// A protobuf-c message living in an arena (implementation detail of the generated code).
public struct _ProtobufCMessage {
    let raw: UnsafeMutableRawPointer
    /// How deep it nests (the top level is 1): what converting it recurses (see ``DecodeStack``).
    @usableFromInline let depth: Int

    init<T>(_ pointer: UnsafeMutablePointer<T>, depth: Int = DecodingOptions.maxDepthCap) {
        raw = UnsafeMutableRawPointer(pointer)
        self.depth = depth
    }

    init(_ message: UnsafeMutablePointer<ProtobufCMessage>, depth: Int = DecodingOptions.maxDepthCap) {
        raw = UnsafeMutableRawPointer(message)
        self.depth = depth
    }

    func pointer<T>(to type: T.Type) -> UnsafePointer<T> { UnsafePointer(raw.assumingMemoryBound(to: T.self)) }

    var base: UnsafeMutablePointer<ProtobufCMessage> { raw.assumingMemoryBound(to: ProtobufCMessage.self) }
}
