// libFuzzer target: Frame(jsonString:) on arbitrary text. What parses prints JSON that parses back
// to the same JSON and bytes, and its binary form decodes back to both. See FuzzChecks.jsonDecode.
import IMCodecTestSupport

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FuzzChecks.fuzz("FuzzJSONDecode", data, size, FuzzChecks.jsonDecode)
}
