internal import CIMCodecRuntime
internal import CProtobufC

// The field views (Views/FieldViews.swift) made from protobuf-c's values, for the generated views.

extension StringView {
    /// A view of a schema `string` protobuf-c unpacked (as bytes, checked as UTF-8 by the pre-scan).
    @_lifetime(borrow data)
    init(_ data: ProtobufCBinaryData) {
        self = _overrideLifetime(StringView(_base: UnsafePointer(data.data), count: data.len), borrowing: data)
    }
}

extension BytesView {
    /// A view of a `bytes` value protobuf-c unpacked.
    @_lifetime(borrow data)
    init(_ data: ProtobufCBinaryData) {
        self = _overrideLifetime(BytesView(_base: UnsafePointer(data.data), count: data.len), borrowing: data)
    }
}
