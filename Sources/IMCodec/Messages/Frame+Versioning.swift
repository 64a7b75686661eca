/// The schema version a frame is written with and the reader version it needs.
extension Frame {
    /// The schema version this library implements: it writes it as `schema_version`, and decoding
    /// refuses frames whose `min_reader_version` is higher (``IMCodecError/Code/unsupportedVersion``).
    ///
    /// Version 1 is the message model; version 2 adds the session layer, reactions, pins, threads,
    /// polls, link previews, disappearing and view-once messages, mention ranges, multi-device and
    /// the vendor details (the SchemaVersions article lists them).
    public static let currentSchemaVersion: UInt32 = 2

    /// A frame carrying `payload`, stamped with the current schema version and the lowest reader
    /// version that can act on it (``requiredReaderVersion(for:)``).
    public init(_ payload: Payload) {
        self.init()
        schemaVersion = Frame.currentSchemaVersion
        minReaderVersion = Frame.requiredReaderVersion(for: payload)
        self.payload = payload
    }

    /// The lowest schema version whose readers act correctly on `payload`: 2 for a message (or an
    /// edit's new content) that is view-once or disappearing, because a version-1 reader would
    /// ignore those fields and keep what the sender wanted gone; 1 otherwise. Fields an old reader
    /// can safely ignore (reactions, link previews, thread summaries...) need no newer reader.
    public static func requiredReaderVersion(for payload: Payload?) -> UInt32 {
        func mustBeHonoured(_ message: Message) -> Bool {
            message.viewOnce || message.expireAfterS != 0 || message.expireAtMs != 0
        }
        switch payload {
        case .message(let message)?: return mustBeHonoured(message) ? 2 : 1
        case .edit(let edit)?: return edit.newMessage.map(mustBeHonoured) == true ? 2 : 1
        default: return 1
        }
    }

    /// A frame carrying a message.
    public init(_ message: Message) { self.init(.message(message)) }
}
