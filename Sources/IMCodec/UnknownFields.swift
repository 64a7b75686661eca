/// Fields a decoder met on the wire that its schema does not know, kept as their wire bytes (tag and
/// value, in the order they came) so a relay running an older schema passes them on unchanged.
public struct UnknownFields: Sendable, Hashable {
    /// The fields' wire bytes.
    public internal(set) var bytes: [UInt8]

    /// No unknown fields.
    public init() { bytes = [] }

    init(bytes: [UInt8]) { self.bytes = bytes }

    /// Whether there are none.
    public var isEmpty: Bool { bytes.isEmpty }
}
