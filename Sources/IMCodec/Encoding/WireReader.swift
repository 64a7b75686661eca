/// Whole fields as C++ `UnknownFieldSet::ParseFromString` reads them (the primitives are
/// ``WireFormat``'s; bounds-checked: false when the bytes are not a field).
enum WireReader {
    /// Skips the field at `i` (groups nested at most `groupBudget` deep); false when it is not one.
    static func skipField(_ bytes: UnsafeBufferPointer<UInt8>, _ i: inout Int, end: Int, groupBudget: Int) -> Bool {
        guard let tag = WireFormat.readVarint(bytes, &i, end: end), tag <= UInt64(UInt32.max), tag >> 3 != 0 else {
            return false
        }
        switch tag & 7 {
        case 0: return WireFormat.readVarint(bytes, &i, end: end) != nil
        case 1: return WireFormat.readFixed(UInt64.self, bytes, &i, end: end) != nil
        case 5: return WireFormat.readFixed(UInt32.self, bytes, &i, end: end) != nil
        case 2:
            guard let length = WireFormat.readVarint(bytes, &i, end: end), length <= UInt64(Int32.max),
                length <= UInt64(end - i)
            else { return false }
            i += Int(length)
            return true
        case 3:
            guard groupBudget > 0 else { return false }
            while true {
                let before = i
                guard let inner = WireFormat.readVarint(bytes, &i, end: end) else { return false }
                if inner & 7 == 4 { return inner >> 3 == tag >> 3 }
                i = before
                if !skipField(bytes, &i, end: end, groupBudget: groupBudget - 1) { return false }
            }
        default:
            return false
        }
    }

    /// Whether `bytes[from..<to]` is a sequence of whole fields, as C++ `UnknownFieldSet::ParseFromString`
    /// decides it (field number 0, wire types 6 and 7, a stray end-group tag and truncation fail).
    static func isMessage(_ bytes: UnsafeBufferPointer<UInt8>, from: Int, to end: Int, groupBudget: Int) -> Bool {
        var i = from
        while i < end {
            if !skipField(bytes, &i, end: end, groupBudget: groupBudget) { return false }
        }
        return true
    }
}
