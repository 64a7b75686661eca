#if Tools
import IMCodec

/// What the store keeps of a message recalled or deleted for everyone (events.proto: it is removed
/// "for every participant"), and of the events kept about it that carried its content: their ids,
/// where they stand in the streams, and nothing the message said. So every read serves the same
/// frames at the same positions as before, with the content gone.
enum Redaction {
    /// The frame kept in place of a removed message: its conversation (as its sender named it), its
    /// sender, ids, seq and server time, `status` (`MESSAGE_STATUS_RECALLED` for a recall,
    /// `MESSAGE_STATUS_DELETED` for a delete for everyone), and no content.
    static func message(
        in key: ConversationKey,
        seq: UInt64,
        sender: String,
        clientMsgID: String,
        serverMsgUID: String,
        serverTimeMs: Int64,
        status: MessageStatus
    ) -> [UInt8] {
        Frame(
            .message(
                Message.with {
                    $0.conversation = key.conversation(for: sender)
                    $0.senderID = sender
                    $0.clientMsgID = clientMsgID
                    $0.serverMsgUID = serverMsgUID
                    $0.seq = seq
                    $0.serverTimeMs = serverTimeMs
                    $0.status = status
                }
            )
        ).serializedBytes()
    }

    /// What a receiver reads again of a view-once message (message.proto `view_once`: "receivers
    /// show the media once, then delete it and keep no copy"): the message with its ids, flags and
    /// times, an empty element of each media kind it held (an image, a video or a voice message a
    /// client shows as opened), and none of its content (media, quote snapshot, custom data). Each
    /// receiving device gets the content once, through its stream.
    static func viewedOnce(_ message: Message) -> Message {
        var stub = message
        stub.elements = message.elements.compactMap { element in
            switch element.content {
            case .image?: MessageElement.with { $0.content = .image(ImageElement()) }
            case .video?: MessageElement.with { $0.content = .video(VideoElement()) }
            case .sound?: MessageElement.with { $0.content = .sound(SoundElement()) }
            default: nil
            }
        }
        stub.quoteSnapshot = nil
        stub.cloudCustomData = []
        return stub
    }

    /// An event frame kept about a removed message, without the content it carried: an edit's
    /// `new_message` keeps only its ids (status `MESSAGE_STATUS_RECALLED`), a stream chunk loses its
    /// text; the event's reference, actor and time stay. Another frame is kept as it is, and one
    /// that does not decode (none should: it was checked when it arrived) is emptied.
    static func event(_ frame: [UInt8]) -> [UInt8] {
        guard var decoded = try? Frame(serializedBytes: frame) else { return [] }
        switch decoded.payload {
        case .edit(var edit)?:
            if let edited = edit.newMessage {
                edit.newMessage = Message.with {
                    if let conversation = edited.conversation { $0.conversation = conversation }
                    $0.senderID = edited.senderID
                    $0.clientMsgID = edited.clientMsgID
                    $0.serverMsgUID = edited.serverMsgUID
                    $0.seq = edited.seq
                    $0.status = .recalled
                }
            }
            decoded.payload = .edit(edit)
        case .streamChunk(var chunk)?:
            chunk.text = ""
            decoded.payload = .streamChunk(chunk)
        default:
            return frame
        }
        return decoded.serializedBytes()
    }
}
#endif
