internal import CIMCodecRuntime

/// UTF-8 validation of bytes that do not come from a Swift string, by the pre-scan's validator.
enum UTF8Check {
    /// The offset of the first byte of the first ill-formed sequence (RFC 3629), or nil when all
    /// of `buffer` is valid UTF-8: the pre-scan's validator (Sources/CIMCodecRuntime/prescan.c)
    /// finds both in one pass.
    static func firstInvalidOffset(_ buffer: UnsafeRawBufferPointer) -> Int? {
        guard let base = buffer.baseAddress, !buffer.isEmpty else { return nil }
        let bad = imcodec_utf8_first_invalid(base.assumingMemoryBound(to: UInt8.self), buffer.count)
        return bad == buffer.count ? nil : bad
    }

    /// Whether all of `bytes` is valid UTF-8.
    static func isValid(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { firstInvalidOffset($0) == nil }
    }
}
