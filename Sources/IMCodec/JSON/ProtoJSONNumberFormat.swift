#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Number text as Google's Python implementation writes it.
enum ProtoJSONNumberFormat {
    /// Python's `repr(float)`: the shortest digits that round-trip, in fixed notation when the
    /// decimal exponent is in -4 ..< 16 (`0.0001`, `1000000000000000.0`, `1.0`), else scientific
    /// with a signed exponent of at least two digits (`1e-05`, `1e+16`, `1.5e+300`). `value` is finite.
    static func pythonRepr(_ value: Double) -> String {
        // Swift's description has the same shortest round-trip digits; only the layout differs.
        var digits: [UInt8] = []
        var pointPosition: Int? = nil  // digits before the '.'
        var exponent = 0
        let negative = value.sign == .minus
        let text = Array(value.magnitude.description.utf8)
        var i = 0
        while i < text.count {
            let c = text[i]
            if c == UInt8(ascii: ".") {
                pointPosition = digits.count
            } else if c == UInt8(ascii: "e") || c == UInt8(ascii: "E") {
                exponent = Int(String(decoding: text[(i + 1)...], as: UTF8.self)) ?? 0
                break
            } else if c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") {
                digits.append(c)
            }
            i += 1
        }
        // value = 0.DIGITS × 10^decimalPoint
        var decimalPoint = (pointPosition ?? digits.count) + exponent
        while let first = digits.first, first == UInt8(ascii: "0") {
            digits.removeFirst()
            decimalPoint -= 1
        }
        while let last = digits.last, last == UInt8(ascii: "0") { digits.removeLast() }
        var result = negative ? "-" : ""
        if digits.isEmpty { return result + "0.0" }
        let d = String(decoding: digits, as: UTF8.self)
        if decimalPoint <= -4 || decimalPoint > 16 {
            result += String(d.first!)
            if digits.count > 1 { result += "." + d.dropFirst() }
            let e = decimalPoint - 1
            result += e < 0 ? "e-" : "e+"
            let magnitude = String(abs(e))
            result += (magnitude.count < 2 ? "0" : "") + magnitude
        } else if decimalPoint <= 0 {
            result += "0." + String(repeating: "0", count: -decimalPoint) + d
        } else if decimalPoint >= digits.count {
            result += d + String(repeating: "0", count: decimalPoint - digits.count) + ".0"
        } else {
            result += d.prefix(decimalPoint) + "." + d.dropFirst(decimalPoint)
        }
        return result
    }

    /// Python protobuf's `ToShortestFloat`: the double nearest the `%.{p}g` text of a float, for the
    /// smallest p >= 6 whose text reads back as the same float.
    static func shortestFloat(_ value: Float) -> Double {
        let original = Double(value)
        guard original.isFinite else { return original }
        for precision in 6...17 {
            let rounded = formatG(original, precision: precision)
            if Float(rounded) == value { return rounded }
        }
        return original
    }

    /// `Double("%.{precision}g" of value)`, correctly rounded by the C library.
    private static func formatG(_ value: Double, precision: Int) -> Double {
        var buffer = [CChar](repeating: 0, count: 64)
        let written = buffer.withUnsafeMutableBufferPointer { out in
            withVaList([Int32(precision), value]) { vsnprintf(out.baseAddress, out.count, "%.*g", $0) }
        }
        guard written > 0 else { return value }
        return buffer.withUnsafeBufferPointer { Double(String(cString: $0.baseAddress!)) } ?? value
    }
}
