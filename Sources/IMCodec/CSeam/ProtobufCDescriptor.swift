internal import CProtobufC

/// A protobuf-c message descriptor (implementation detail of the generated code).
public struct _ProtobufCDescriptor: @unchecked Sendable {
    // Points at a `const` descriptor in the generated C code: immutable static data.
    let pointer: UnsafePointer<ProtobufCMessageDescriptor>

    /// Finds the descriptor of `T` by running its generated init function on scratch memory: the
    /// init function stores the address of the real descriptor in the message's `base`.
    init<T>(_ type: T.Type, _ initialize: (UnsafeMutablePointer<T>?) -> Void) {
        let scratch = UnsafeMutablePointer<T>.allocate(capacity: 1)
        defer { scratch.deallocate() }
        initialize(scratch)
        pointer = UnsafeRawPointer(scratch).load(as: UnsafePointer<ProtobufCMessageDescriptor>.self)
    }
}
