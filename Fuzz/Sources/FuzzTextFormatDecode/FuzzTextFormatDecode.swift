// libFuzzer target: Frame(textFormatString:) on arbitrary text. What parses prints text that parses
// back to the same text and bytes, and its binary form decodes back to both. See
// FuzzChecks.textFormatDecode.
import IMCodecTestSupport

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FuzzChecks.fuzz("FuzzTextFormatDecode", data, size, FuzzChecks.textFormatDecode)
}
