#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension FuzzChecks {
    /// One libFuzzer input through one check: every fuzz target's `LLVMFuzzerTestOneInput` is this
    /// call. A problem is written to standard error as "TARGET: problem" and the process aborts,
    /// which libFuzzer reports as a crash, keeping the input (`Fuzz/run` copies it to
    /// `Fuzz/FailCases/TARGET/`).
    /// - Parameters:
    ///   - target: The fuzz target's name, for the message.
    ///   - data: The input's bytes, as libFuzzer passes them.
    ///   - size: The input's length.
    ///   - check: The property the input must have (one of the checks above).
    public static func fuzz(
        _ target: String,
        _ data: UnsafePointer<UInt8>?,
        _ size: Int,
        _ check: ([UInt8]) -> String?
    ) -> CInt {
        let bytes = size > 0 ? Array(UnsafeBufferPointer(start: data, count: size)) : []
        if let problem = check(bytes) {
            var line = "\(target): \(problem)\n"
            line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
            abort()
        }
        return 0
    }
}
