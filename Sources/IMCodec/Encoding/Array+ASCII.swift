extension [UInt8] {
    /// Appends the bytes of a literal (the printers' fixed text: brackets, keywords, escapes).
    @inline(__always)
    mutating func append(ascii s: StaticString) {
        append(contentsOf: UnsafeBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }
}
