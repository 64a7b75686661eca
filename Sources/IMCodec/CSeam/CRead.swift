internal import CIMCodecRuntime
internal import CProtobufC

/// Reads what protobuf-c keeps beside a message's fields (used by the generated views).
enum CRead {
    /// The unknown fields protobuf-c kept, as wire bytes (tag, then the value as it came).
    ///
    /// A field numbered `IMCODEC_WRAPPER_FIELD_NUMBER` is a wrapper made by imcodec_transcode (see
    /// ``WireCodec``): its payload is a whole original field (a known field that came with the
    /// wrong wire type, or a genuine field of that number), written back as it was. The pre-scan
    /// sends every input holding such a number through the transcoder, so a field of that number
    /// here is always a wrapper.
    static func unknownFields(_ base: ProtobufCMessage) -> UnknownFields {
        guard base.n_unknown_fields > 0, let fields = base.unknown_fields else { return UnknownFields() }
        return unknownFields(fields, count: Int(base.n_unknown_fields))
    }

    /// The bytes of `count` unknown fields (out of line: most messages have none, and take the
    /// early return above without paying for this part's stack frame).
    @inline(never)
    private static func unknownFields(
        _ fields: UnsafeMutablePointer<ProtobufCMessageUnknownField>,
        count: Int
    ) -> UnknownFields {
        // Exactly sized (the pre-scan's memory estimate counts on it; a wrapper's canonical form
        // is never longer than the original).
        var total = 0
        var rewritten: [Int: [UInt8]] = [:]
        for i in 0..<count {
            let field = fields[i]
            if let payload = wrapped(field) {
                let canonical = canonicalField(payload)
                rewritten[i] = canonical
                total += canonical.count
            } else {
                let tag = WireFormat.tag(UInt64(field.tag), UInt64(field.wire_type.rawValue))
                total += WireFormat.varintSize(tag) + field.len
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(total)
        for i in 0..<count {
            let field = fields[i]
            if let canonical = rewritten[i] {
                bytes.append(contentsOf: canonical)
                continue
            }
            WireFormat.appendTag(UInt64(field.tag), UInt64(field.wire_type.rawValue), to: &bytes)
            if field.len > 0, let data = field.data {
                bytes.append(contentsOf: UnsafeBufferPointer(start: data, count: field.len))
            }
        }
        return UnknownFields(bytes: bytes)
    }

    /// A wrapped original field as Google's serializer writes it back: its tag in the shortest form
    /// (the input may have padded it, as in `a2 00` for tag 34), its value bytes as they came (a
    /// padded varint value or length prefix stays padded, as upb keeps it). A field whose tag it
    /// cannot read is kept as it was.
    private static func canonicalField(_ field: UnsafeBufferPointer<UInt8>) -> [UInt8] {
        var index = 0
        guard let tag = WireFormat.readVarint(field, &index) else { return Array(field) }
        var out: [UInt8] = []
        out.reserveCapacity(field.count)
        WireFormat.appendVarint(tag, to: &out)
        out.append(contentsOf: UnsafeBufferPointer(rebasing: field[index...]))
        return out
    }

    /// The original field inside a wrapper (its bytes after the wrapper's length prefix), or nil
    /// when `field` is not a wrapper.
    @inline(__always)
    private static func wrapped(_ field: ProtobufCMessageUnknownField) -> UnsafeBufferPointer<UInt8>? {
        guard field.tag == IMCODEC_WRAPPER_FIELD_NUMBER, field.wire_type == PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED,
            let data = field.data
        else { return nil }
        let bytes = UnsafeBufferPointer(start: data, count: field.len)
        var prefix = 0
        guard WireFormat.readVarint(bytes, &prefix, maxBytes: 5) != nil else { return nil }
        return UnsafeBufferPointer(rebasing: bytes[prefix...])
    }
}
