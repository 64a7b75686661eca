/// Fields a decoder met on the wire that its schema does not know, kept as their wire bytes (tag and
/// value, in the order they came) so a relay running an older schema passes them on unchanged.
///
/// `debugDescription` (and so `print`) shows the fields by number in protobuf text format, as
/// `protoc --decode` prints them: `UnknownFields:` and a line such as `23: 5` per field, or
/// `UnknownFields()` when there are none.
public struct UnknownFields: Sendable, Hashable, CustomDebugStringConvertible {
    /// The fields' wire bytes.
    public internal(set) var bytes: [UInt8]

    /// No unknown fields.
    public init() { bytes = [] }

    init(bytes: [UInt8]) { self.bytes = bytes }

    /// Whether there are none.
    public var isEmpty: Bool { bytes.isEmpty }

    /// The fields by number in text format after `UnknownFields:`, or `UnknownFields()` when empty.
    public var debugDescription: String {
        bytes.isEmpty ? "UnknownFields()" : "UnknownFields:\n" + TextFormatPrinter.printUnknownFields(bytes)
    }
}
