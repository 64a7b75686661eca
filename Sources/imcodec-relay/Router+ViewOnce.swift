#if Tools
import IMCodec
import IMCodecNIO

/// View-once messages (message.proto `view_once`: "receivers show the media once, then delete it
/// and keep no copy"). A receiving device gets the content live or from its stream until it
/// acknowledges a stream position at or past it; every other read by a receiver serves the stub
/// ``Redaction/viewedOnce(_:)`` (history and the conversation list through ``applyChanges``, sync
/// by seq, a stream sync from before what the device acknowledged). A device the relay first sees
/// log in after the message was kept (a new device id) is not one it was sent to: its stream
/// serves the stub too (``deviceFloors``), so a new device id does not show it again. The relay
/// keeps which kept messages are view-once (``Router/viewOnceMessages``, a state record per
/// conversation), so that nothing shows their content again: an edit or a stream chunk of one is
/// refused.
extension Router {
    /// Remembers that kept message `seq` of `key` is view-once, when `frame` says so.
    func noteViewOnce(_ frame: InboundFrame, seq: UInt64, in key: ConversationKey) {
        guard frame.isViewOnce else { return }
        viewOnceMessages[key, default: []].insert(seq)
        storeViewOnce(of: key)
    }

    /// Whether kept message `seq` of `key` is view-once.
    func isViewOnce(_ seq: UInt64, in key: ConversationKey) -> Bool {
        viewOnceMessages[key]?.contains(seq) == true
    }

    /// Loads a conversation's view-once messages from their state record.
    func loadViewOnce(_ bytes: [UInt8], in key: ConversationKey) {
        guard let seqs = SeqListBytes.seqs(bytes[...]), !seqs.isEmpty else { return }
        viewOnceMessages[key] = Set(seqs)
    }

    /// Forgets the view-once messages of `key` with seqs in `trimmed` (retention dropped them).
    func forgetViewOnce(in key: ConversationKey, trimmed: Range<UInt64>) {
        guard let seqs = viewOnceMessages[key] else { return }
        let gone = trimmed.present(in: seqs)
        guard !gone.isEmpty else { return }
        viewOnceMessages[key]!.subtract(gone)
        storeViewOnce(of: key)
    }

    private func storeViewOnce(of key: ConversationKey) {
        let seqs = viewOnceMessages[key] ?? []
        if seqs.isEmpty { viewOnceMessages[key] = nil }
        var bytes: [UInt8] = []
        SeqListBytes.append(seqs.sorted(), to: &bytes)
        store.batch.records[.viewOnce(key)] = bytes
    }

    /// The stream position at or below which `device` reads a view-once message without its
    /// content: what it acknowledged, or its floor when that is higher.
    func viewedOncePosition(of device: DeviceKey) -> UInt64 {
        max(devicePositions[device] ?? 0, deviceFloors[device] ?? 0)
    }

    /// A kept message's stamped frame as a device reads it again: a view-once message it received
    /// without its content (``Redaction/viewedOnce(_:)``), any other as it is.
    func viewedOnce(_ frame: [UInt8]) -> [UInt8] {
        let isViewOnce = try? wireDecoder.withFrameView(frame) { view in
            if case .message(let message)? = view.payload { message.viewOnce } else { false }
        }
        guard isViewOnce == true, var decoded = try? wireDecoder.decode(Frame.self, from: frame),
            case .message(let message)? = decoded.payload
        else { return frame }
        decoded.payload = .message(Redaction.viewedOnce(message))
        return decoded.serializedBytes()
    }
}
#endif
