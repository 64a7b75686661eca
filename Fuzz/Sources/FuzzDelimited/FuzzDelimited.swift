// libFuzzer target: Delimited.Reader<Frame> over arbitrary bytes. It splits records like
// RecordReader, makes progress, stops, and decodes each record as Frame(serializedBytes:) does.
// See FuzzChecks.delimited.
import IMCodecTestSupport

#if canImport(Glibc)
import Glibc
#endif

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = size > 0 ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    if let problem = FuzzChecks.delimited(bytes) {
        var line = "FuzzDelimited: \(problem)\n"
        line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
        abort()
    }
    return 0
}
