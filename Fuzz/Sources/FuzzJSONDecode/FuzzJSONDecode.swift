// libFuzzer target: Frame(jsonString:) on arbitrary text. What parses prints JSON that parses back
// to the same JSON and bytes, and its binary form decodes back to both. See FuzzChecks.jsonDecode.
import IMCodecTestSupport

#if canImport(Glibc)
import Glibc
#endif

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = size > 0 ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    if let problem = FuzzChecks.jsonDecode(bytes) {
        var line = "FuzzJSONDecode: \(problem)\n"
        line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
        abort()
    }
    return 0
}
