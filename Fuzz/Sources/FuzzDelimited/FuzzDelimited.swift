// libFuzzer target: Delimited.Reader<Frame> over arbitrary bytes. It splits records like
// RecordReader, makes progress, stops, and decodes each record as Frame(serializedBytes:) does.
// See FuzzChecks.delimited.
import IMCodecTestSupport

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FuzzChecks.fuzz("FuzzDelimited", data, size, FuzzChecks.delimited)
}
