// libFuzzer target: Frame(serializedBytes:) on arbitrary bytes. Every decoding path agrees, what
// decodes re-encodes stably, the routing view matches the full decode, JSON printed from the bytes
// and from the value agree, and the memory estimate bounds what decoding takes (the Swift value's
// heap measured with AddressSanitizer's allocator statistics). See FuzzChecks.binaryDecode.
import FuzzSupport
import IMCodecTestSupport

/// The sanitizer allocator's live bytes, when the build has AddressSanitizer.
let allocatedBytes: (@Sendable () -> Int)? =
    fuzz_allocated_bytes() >= 0 ? { @Sendable in Int(fuzz_allocated_bytes()) } : nil

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FuzzChecks.fuzz("FuzzBinaryDecode", data, size, { FuzzChecks.binaryDecode($0, allocatedBytes: allocatedBytes) })
}
