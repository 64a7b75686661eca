// libFuzzer target: Frame(textFormatString:) on arbitrary text. What parses prints text that parses
// back to the same text and bytes, and its binary form decodes back to both. See
// FuzzChecks.textFormatDecode.
import IMCodecTestSupport

#if canImport(Glibc)
import Glibc
#endif

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = size > 0 ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    if let problem = FuzzChecks.textFormatDecode(bytes) {
        var line = "FuzzTextFormatDecode: \(problem)\n"
        line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
        abort()
    }
    return 0
}
