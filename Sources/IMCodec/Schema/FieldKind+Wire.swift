/// How each kind of field is written on the wire, for the format engines: the printers read values
/// with ``FieldKind/readValue(_:_:end:)``, the parsers write them with the `append…` functions,
/// all through ``WireFormat``.
extension FieldKind {
    /// The wire type of one value of this kind written alone (not packed).
    package var wireType: UInt8 {
        switch self {
        case .int32, .sint32, .uint32, .int64, .sint64, .uint64, .bool, .enumeration: 0
        case .fixed64, .sfixed64, .double: 1
        case .string, .bytes, .message: 2
        case .fixed32, .sfixed32, .float: 5
        }
    }

    /// Reads one value of this kind at `i` (never past `end`) and moves `i` past it. Truncated
    /// input (never the case for a value's own bytes) reads as zero.
    func readValue(_ bytes: UnsafeBufferPointer<UInt8>, _ i: inout Int, end: Int) -> WireValue {
        switch self {
        case .fixed64, .sfixed64, .double:
            let raw = WireFormat.readFixed(UInt64.self, bytes, &i, end: end) ?? 0
            switch self {
            case .fixed64: return .unsigned(raw)
            case .sfixed64: return .signed(Int64(bitPattern: raw))
            default: return .double(Double(bitPattern: raw))
            }
        case .fixed32, .sfixed32, .float:
            let raw = WireFormat.readFixed(UInt32.self, bytes, &i, end: end) ?? 0
            switch self {
            case .fixed32: return .unsigned(UInt64(raw))
            case .sfixed32: return .signed(Int64(Int32(bitPattern: raw)))
            default: return .float(Float(bitPattern: raw))
            }
        case .string, .bytes, .message:
            let length = Int(WireFormat.readVarint(bytes, &i, end: end) ?? 0)
            let start = i
            i = min(i + length, end)
            return .bytes(start..<i)
        default:
            let raw = WireFormat.readVarint(bytes, &i, end: end) ?? 0
            switch self {
            case .int32, .enumeration: return .signed(Int64(Int32(truncatingIfNeeded: raw)))
            case .sint32:
                let v = UInt32(truncatingIfNeeded: raw)
                return .signed(Int64(Int32(bitPattern: (v >> 1) ^ (0 &- (v & 1)))))
            case .uint32: return .unsigned(UInt64(UInt32(truncatingIfNeeded: raw)))
            case .int64: return .signed(Int64(bitPattern: raw))
            case .sint64: return .signed(Int64(bitPattern: (raw >> 1) ^ (0 &- (raw & 1))))
            case .bool: return .bool(raw != 0)
            default: return .unsigned(raw)  // uint64
            }
        }
    }

    /// Appends field `number` of this integer, enum or bool kind holding `value` (for a signed
    /// kind, the bits of an `Int64`; range checks are the caller's).
    func appendInteger(_ value: UInt64, number: UInt32, to out: inout [UInt8]) {
        WireFormat.appendTag(UInt64(number), UInt64(wireType), to: &out)
        switch self {
        case .sint32:
            let v = Int32(truncatingIfNeeded: value)
            WireFormat.appendVarint(UInt64(UInt32(bitPattern: (v << 1) ^ (v >> 31))), to: &out)
        case .sint64:
            let v = Int64(bitPattern: value)
            WireFormat.appendVarint(UInt64(bitPattern: (v << 1) ^ (v >> 63)), to: &out)
        case .fixed32, .sfixed32:
            WireFormat.appendFixed(UInt32(truncatingIfNeeded: value), to: &out)
        case .fixed64, .sfixed64:
            WireFormat.appendFixed(value, to: &out)
        case .bool:
            out.append(value != 0 ? 1 : 0)
        default:
            WireFormat.appendVarint(value, to: &out)
        }
    }

    /// Appends field `number` of kind ``float`` or ``double`` holding `value`.
    func appendFloatingPoint(_ value: Double, number: UInt32, to out: inout [UInt8]) {
        WireFormat.appendTag(UInt64(number), UInt64(wireType), to: &out)
        if self == .float {
            WireFormat.appendFixed(Float(value).bitPattern, to: &out)
        } else {
            WireFormat.appendFixed(value.bitPattern, to: &out)
        }
    }

    /// Appends field `number` holding `bytes` (a string, bytes).
    static func appendLengthDelimited(_ bytes: some Collection<UInt8>, number: UInt32, to out: inout [UInt8]) {
        WireFormat.appendTag(UInt64(number), 2, to: &out)
        WireFormat.appendVarint(UInt64(bytes.count), to: &out)
        out.append(contentsOf: bytes)
    }
}

/// One value read from the wire by ``FieldKind/readValue(_:_:end:)``.
enum WireValue {
    /// int32, sint32, sfixed32, int64, sint64, sfixed64, enum.
    case signed(Int64)
    /// uint32, fixed32, uint64, fixed64.
    case unsigned(UInt64)
    case float(Float)
    case double(Double)
    case bool(Bool)
    /// string, bytes, message: where the value's bytes are.
    case bytes(Range<Int>)
}

/// A sub-message being written: its tag and a length patched when it ends.
struct LengthDelimitedMark {
    /// Where the length is.
    let position: Int

    /// Appends the tag of field `number` (wire type 2) and room for the length.
    init(number: UInt32, in out: inout [UInt8]) {
        WireFormat.appendTag(UInt64(number), 2, to: &out)
        position = out.count
        out.append(contentsOf: repeatElement(0, count: 5))
    }

    /// Stores the length of what followed the mark: a varint padded to 5 bytes (valid protobuf; the
    /// decoded value is re-encoded canonically). False when it is too large for that.
    func close(in out: inout [UInt8]) -> Bool {
        let length = out.count - position - 5
        guard length < 1 << 35 else { return false }
        out.withUnsafeMutableBytes { raw in
            WireFormat.storeVarint(UInt64(length), at: raw.baseAddress! + position, paddedTo: 5)
        }
        return true
    }
}

extension WireValue {
    /// The value a field of `kind` has when the wire does not hold it (proto3's defaults; an empty
    /// message for a message).
    static func defaultValue(of kind: FieldKind) -> WireValue {
        switch kind {
        case .int32, .sint32, .sfixed32, .int64, .sint64, .sfixed64, .enumeration: .signed(0)
        case .uint32, .fixed32, .uint64, .fixed64: .unsigned(0)
        case .float: .float(0)
        case .double: .double(0)
        case .bool: .bool(false)
        case .string, .bytes, .message: .bytes(0..<0)
        }
    }
}
