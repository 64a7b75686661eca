/// JSON number text: the grammar, and exact conversion to integers.
enum JSONNumber {
    /// Advances `i` past a number that follows the JSON grammar, or returns false.
    static func scan<C: RandomAccessCollection>(_ s: C, _ i: inout C.Index) -> Bool where C.Element == UInt8 {
        func digit(_ index: C.Index) -> Bool {
            index < s.endIndex && s[index] >= UInt8(ascii: "0") && s[index] <= UInt8(ascii: "9")
        }
        if i < s.endIndex && s[i] == UInt8(ascii: "-") { i = s.index(after: i) }
        guard digit(i) else { return false }
        if s[i] == UInt8(ascii: "0") {
            i = s.index(after: i)
        } else {
            while digit(i) { i = s.index(after: i) }
        }
        if i < s.endIndex && s[i] == UInt8(ascii: ".") {
            i = s.index(after: i)
            guard digit(i) else { return false }
            while digit(i) { i = s.index(after: i) }
        }
        if i < s.endIndex && (s[i] == UInt8(ascii: "e") || s[i] == UInt8(ascii: "E")) {
            i = s.index(after: i)
            if i < s.endIndex && (s[i] == UInt8(ascii: "+") || s[i] == UInt8(ascii: "-")) { i = s.index(after: i) }
            guard digit(i) else { return false }
            while digit(i) { i = s.index(after: i) }
        }
        return true
    }

    /// Whether all of `s` is one JSON number.
    static func isNumber<C: RandomAccessCollection>(_ s: C) -> Bool where C.Element == UInt8 {
        var i = s.startIndex
        return scan(s, &i) && i == s.endIndex
    }

    enum IntegerResult: Equatable {
        case notANumber
        case notIntegral
        case tooLarge
        case value(negative: Bool, magnitude: UInt64)
    }

    /// The exact integer a JSON number denotes (`1e2` and `100.0` are 100; `1.5` is not an integer).
    static func integer<C: RandomAccessCollection>(_ s: C) -> IntegerResult where C.Element == UInt8 {
        guard isNumber(s) else { return .notANumber }
        var negative = false
        var digits: [UInt8] = []  // significant digits, integer part then fraction
        var fractionCount = 0
        var exponent = 0
        var inFraction = false
        var i = s.startIndex
        if s[i] == UInt8(ascii: "-") { negative = true; i = s.index(after: i) }
        while i < s.endIndex {
            let b = s[i]
            if b == UInt8(ascii: ".") {
                inFraction = true
            } else if b == UInt8(ascii: "e") || b == UInt8(ascii: "E") {
                i = s.index(after: i)
                var exponentNegative = false
                if s[i] == UInt8(ascii: "+") || s[i] == UInt8(ascii: "-") {
                    exponentNegative = s[i] == UInt8(ascii: "-")
                    i = s.index(after: i)
                }
                while i < s.endIndex {
                    exponent = min(exponent * 10 + Int(s[i] - UInt8(ascii: "0")), 1_000_000)
                    i = s.index(after: i)
                }
                if exponentNegative { exponent = -exponent }
                break
            } else {
                if !(digits.isEmpty && b == UInt8(ascii: "0")) { digits.append(b - UInt8(ascii: "0")) }
                if inFraction { fractionCount += 1 }
            }
            i = s.index(after: i)
        }
        // value = digits × 10^(exponent - fractionCount), leading zeros already dropped
        var scale = exponent - fractionCount
        while let last = digits.last, last == 0 {
            digits.removeLast()
            scale += 1
        }
        if digits.isEmpty { return .value(negative: negative, magnitude: 0) }
        if scale < 0 { return .notIntegral }
        if digits.count + scale > 20 { return .tooLarge }
        var magnitude: UInt64 = 0
        for d in digits + [UInt8](repeating: 0, count: scale) {
            let (times10, o1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(UInt64(d))
            if o1 || o2 { return .tooLarge }
            magnitude = sum
        }
        return .value(negative: negative, magnitude: magnitude)
    }
}
