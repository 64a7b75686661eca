internal import CIMCodecRuntime
internal import CProtobufC

/// Reads protobuf-c's string and bytes values (`ProtobufCBinaryData`: `size_t len; uint8_t *data;`)
/// for the field views (``StringListView``, ``StringMapView``), which hold untyped pointers into
/// protobuf-c's arrays and map entries and import no C themselves.
enum BinaryData {
    /// The bytes and length of the `ProtobufCBinaryData` at `offset` bytes past `base` (a field of a
    /// map entry, at the offset the generated view passes).
    @inline(__always)
    static func read(_ base: UnsafeRawPointer, at offset: Int) -> (UnsafePointer<UInt8>?, Int) {
        unpack(base.load(fromByteOffset: offset, as: ProtobufCBinaryData.self))
    }

    /// The bytes and length of element `index` of an array of `ProtobufCBinaryData` at `base` (a
    /// repeated string or bytes field).
    @inline(__always)
    static func element(_ index: Int, of base: UnsafeRawPointer) -> (UnsafePointer<UInt8>?, Int) {
        unpack(
            base.load(fromByteOffset: index * MemoryLayout<ProtobufCBinaryData>.stride, as: ProtobufCBinaryData.self)
        )
    }

    @inline(__always)
    private static func unpack(_ value: ProtobufCBinaryData) -> (UnsafePointer<UInt8>?, Int) {
        value.len > 0 ? (UnsafePointer(value.data), value.len) : (nil, 0)
    }
}
