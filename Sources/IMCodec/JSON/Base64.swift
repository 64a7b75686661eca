/// RFC 4648 base64 (implementation detail of the JSON mapping of `bytes`).
enum Base64 {
    private static let alphabet: [UInt8] = Array(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8
    )

    /// Appends the standard, padded encoding of `bytes`.
    static func encode(_ bytes: UnsafeBufferPointer<UInt8>, into out: inout [UInt8]) {
        out.reserveCapacity(out.count + (bytes.count + 2) / 3 * 4)
        var i = 0
        while i + 3 <= bytes.count {
            let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            out.append(alphabet[Int(v >> 18 & 63)])
            out.append(alphabet[Int(v >> 12 & 63)])
            out.append(alphabet[Int(v >> 6 & 63)])
            out.append(alphabet[Int(v & 63)])
            i += 3
        }
        let rest = bytes.count - i
        if rest == 1 {
            let v = UInt32(bytes[i]) << 16
            out.append(alphabet[Int(v >> 18 & 63)])
            out.append(alphabet[Int(v >> 12 & 63)])
            out.append(UInt8(ascii: "="))
            out.append(UInt8(ascii: "="))
        } else if rest == 2 {
            let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
            out.append(alphabet[Int(v >> 18 & 63)])
            out.append(alphabet[Int(v >> 12 & 63)])
            out.append(alphabet[Int(v >> 6 & 63)])
            out.append(UInt8(ascii: "="))
        }
    }

    /// Decodes standard (`+/`) or URL-safe (`-_`) base64, padded or not (bits left over after the
    /// last whole byte are ignored, as Google's decoders do); otherwise the index of the first bad
    /// character.
    static func decode(_ text: ArraySlice<UInt8>) -> Result<[UInt8], DecodeError> {
        var end = text.endIndex
        var padding = 0
        while end > text.startIndex && text[end - 1] == UInt8(ascii: "=") && padding < 2 {
            end -= 1
            padding += 1
        }
        let length = end - text.startIndex
        var out: [UInt8] = []
        out.reserveCapacity(length * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        var index = text.startIndex
        while index < end {
            let c = text[index]
            let v: UInt32
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): v = UInt32(c - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): v = UInt32(c - UInt8(ascii: "a") + 26)
            case UInt8(ascii: "0")...UInt8(ascii: "9"): v = UInt32(c - UInt8(ascii: "0") + 52)
            case UInt8(ascii: "+"), UInt8(ascii: "-"): v = 62
            case UInt8(ascii: "/"), UInt8(ascii: "_"): v = 63
            default:
                return .failure(
                    DecodeError(index: index - text.startIndex, reason: "a character outside the base64 alphabets")
                )
            }
            accumulator = accumulator << 6 | v
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
            index += 1
        }
        if padding > 0 && (length + padding) % 4 != 0 {
            return .failure(DecodeError(index: length, reason: "padding '=' that does not fill a group of 4"))
        }
        if length % 4 == 1 {
            return .failure(DecodeError(index: length, reason: "a length that no byte sequence encodes to"))
        }
        return .success(out)
    }

    struct DecodeError: Error {
        let index: Int
        let reason: String
    }
}
