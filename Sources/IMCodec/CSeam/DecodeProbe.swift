// Decoding with its memory accounting, with `package` access (not API: only this package's
// targets see it), for the oracles in IMCodecTestSupport (FuzzChecks, used by HardeningTests and
// the fuzz targets in Fuzz/) and for HardeningTests and the heap probes: the pre-scan's estimate
// against what the arena really handed out.
internal import CIMCodecRuntime
internal import CProtobufC

/// What one decode took and what the pre-scan estimated (for HardeningTests, FuzzChecks and the heap
/// probes, which check that the estimate bounds what protobuf-c and the Swift value really take).
/// Not API.
package struct DecodeAccounting: Sendable, Hashable {
    /// The pre-scan's upper bound of protobuf-c's arena bytes.
    package let estimatedArenaBytes: Int
    /// The pre-scan's estimate of the Swift value's heap bytes.
    package let estimatedValueBytes: Int
    /// Bytes protobuf-c (and, for transcoded input, the rewritten copy) took from the arena.
    package let arenaBytesUsed: Int
    /// Bytes the arena held from the system (blocks and headers).
    package let arenaBytesReserved: Int
    /// Fields kept as unknown through the transcoder (0 and no merged fields: the fast path).
    package let wrappedFields: Int
    /// Repeated singular sub-messages the transcoder merged (0 and no wrapped fields: the fast path).
    package let mergedFields: Int
    /// The most bytes the arena could hand out by the end of the decode: for input decoded as it
    /// is, the estimate plus alignment slack; for rewritten input (wrapped or merged fields), the
    /// rewrite's buffers plus the estimate of the rewritten bytes, checked before protobuf-c ran.
    package let arenaCap: Int

    /// Whether the input was rewritten before protobuf-c saw it.
    package var rewritten: Bool { wrappedFields > 0 || mergedFields > 0 }
}

/// Decoding with its memory accounting (for HardeningTests, FuzzChecks and the heap probes). Not API.
package enum DecodeProbe {
    /// No input of `count` bytes has an estimate above `count * perByte + fixed` bytes; shorter
    /// inputs than the limit allows by this bound are scanned without the estimate.
    package static var bound: (perByte: Int, fixed: Int) { ValueCost.bound }

    /// Decodes like `M(serializedBytes:options:)`, through the same pipeline, and reports the
    /// estimate (made even for input too short to pass the limit) and the arena's use.
    package static func decode<M: IMCodecMessage>(
        _ type: M.Type,
        from bytes: [UInt8],
        options: DecodingOptions = DecodingOptions()
    ) throws(IMCodecError) -> (M, DecodeAccounting) {
        try withContiguousBytes(bytes) { (buffer) throws(IMCodecError) -> (M, DecodeAccounting) in
            try DecodePipeline.withUnpacked(
                M._protobufCDescriptor,
                buffer,
                options: options,
                arena: nil,
                alwaysEstimate: true
            ) {
                (unpacked) throws(IMCodecError) -> (M, DecodeAccounting) in
                let scan = unpacked.scan
                let arena = unpacked.arena
                let accounting = DecodeAccounting(
                    estimatedArenaBytes: scan.arena_bytes,
                    estimatedValueBytes: scan.value_bytes,
                    arenaBytesUsed: arena.bytesUsed,
                    arenaBytesReserved: arena.bytesReserved,
                    wrappedFields: scan.wrap_count,
                    mergedFields: scan.merge_count,
                    arenaCap: arena.maxBytes
                )
                let value: M = try DecodePipeline.value(unpacked.message)
                return (value, accounting)
            }
        }
    }
}
