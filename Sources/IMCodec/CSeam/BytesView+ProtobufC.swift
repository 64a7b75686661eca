internal import CIMCodecRuntime
internal import CProtobufC

extension BytesView {
    /// A view of a `bytes` value protobuf-c unpacked.
    @_lifetime(borrow data)
    init(_ data: ProtobufCBinaryData) {
        self = _overrideLifetime(BytesView(_base: UnsafePointer(data.data), count: data.len), borrowing: data)
    }
}
