/// The schema version a frame is written with and the reader version it needs.
extension Frame {
    /// The schema version this library implements: it writes it as `schema_version`, and decoding
    /// refuses frames whose `min_reader_version` is higher (``IMCodecError/Code/unsupportedVersion``).
    ///
    /// Version 1 is the message model; version 2 adds the session layer, reactions, pins, threads,
    /// polls, link previews, disappearing and view-once messages, mention ranges, multi-device and
    /// the vendor details; version 3 adds media metadata, rich text styles, quote snapshots,
    /// stickers, contact cards, calls and call logs, bot buttons, streamed messages and the
    /// end-to-end encryption envelope (the SchemaVersions article lists them).
    public static let currentSchemaVersion: UInt32 = 3

    /// A frame carrying `payload`, stamped with the current schema version and the lowest reader
    /// version that can act on it (``requiredReaderVersion(for:)``).
    public init(_ payload: Payload) {
        self.init()
        schemaVersion = Frame.currentSchemaVersion
        minReaderVersion = Frame.requiredReaderVersion(for: payload)
        self.payload = payload
    }

    /// The lowest schema version whose readers act correctly on `payload`, for a message (or an
    /// edit's new content); 1 for every other payload.
    ///
    /// - 3 when the message (or a message merged into it) carries an ``EncryptedElement`` (a
    ///   version-2 reader would show an empty message), media whose file is encrypted
    ///   (``MediaKey``: it would show ciphertext) or a spoiler (``TextStyle/spoiler``: it would show
    ///   the hidden text).
    /// - 2 when it is view-once or disappearing: a version-1 reader would ignore those fields and
    ///   keep what the sender wanted gone.
    /// - 1 otherwise. Fields an old reader can safely ignore (reactions, link previews, thread
    ///   summaries, captions, stickers...) need no newer reader.
    public static func requiredReaderVersion(for payload: Payload?) -> UInt32 {
        switch payload {
        case .message(let message)?: return readerVersion(message, depth: 0)
        case .edit(let edit)?: return edit.newMessage.map { readerVersion($0, depth: 0) } ?? 1
        default: return 1
        }
    }

    private static func readerVersion(_ message: Message, depth: Int) -> UInt32 {
        var version: UInt32 = message.viewOnce || message.expireAfterS != 0 || message.expireAtMs != 0 ? 2 : 1
        for element in message.elements {
            switch element.content {
            case .encrypted?: return 3
            case .image(let image)? where image.mediaKey != nil: return 3
            case .video(let video)? where video.mediaKey != nil: return 3
            case .sound(let sound)? where sound.mediaKey != nil: return 3
            case .file(let file)? where file.mediaKey != nil: return 3
            case .text(let text)? where text.styles.contains(where: { $0.style == .spoiler }): return 3
            case .merger(let merger)? where depth < 100:
                for merged in merger.messages { version = max(version, readerVersion(merged, depth: depth + 1)) }
                if version == 3 { return 3 }
            default: break
            }
        }
        return version
    }

    /// A frame carrying a message.
    public init(_ message: Message) { self.init(.message(message)) }
}
