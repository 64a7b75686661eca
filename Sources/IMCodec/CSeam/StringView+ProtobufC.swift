internal import CIMCodecRuntime
internal import CProtobufC

extension StringView {
    /// A view of a schema `string` protobuf-c unpacked (as bytes, checked as UTF-8 by the pre-scan).
    @_lifetime(borrow data)
    init(_ data: ProtobufCBinaryData) {
        self = _overrideLifetime(StringView(_base: UnsafePointer(data.data), count: data.len), borrowing: data)
    }
}
