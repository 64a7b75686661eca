#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Number text as Google's C++ runtime writes it in text format.
enum TextFormatNumbers {
    /// C++ `SimpleDtoa`: `%.15g`, or `%.17g` when that does not read back as the same double;
    /// `inf`, `-inf`, `nan`.
    static func double(_ value: Double) -> String {
        if value.isNaN { return "nan" }
        if value.isInfinite { return value < 0 ? "-inf" : "inf" }
        let short = format(value, precision: 15)
        if strtod(short, nil) == value { return short }
        return format(value, precision: 17)
    }

    /// C++ `SimpleFtoa`: `%.6g`, or `%.9g` when that does not read back as the same float.
    static func float(_ value: Float) -> String {
        if value.isNaN { return "nan" }
        if value.isInfinite { return value < 0 ? "-inf" : "inf" }
        let short = format(Double(value), precision: 6)
        if strtof(short, nil) == value { return short }
        return format(Double(value), precision: 9)
    }

    private static func format(_ value: Double, precision: Int32) -> String {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { buffer in
            let written = withVaList([precision, value]) { vsnprintf(buffer.baseAddress, 64, "%.*g", $0) }
            guard written > 0 else { return String(value) }
            return String(cString: buffer.baseAddress!)
        }
    }
}
