#if Tools
import IMCodec
import IMCodecNIO

/// How many messages a group, chatroom or ultra group carried in one second.
struct GroupLoad {
    /// The second (milliseconds since the epoch / 1000) counted.
    var second: Int64
    /// The messages it carried in that second.
    var messages: Int
}

/// Message priorities (message.proto Priority, Tencent V2TIMMessagePriority: "Under load, lower
/// priorities are dropped first"). The relay counts the messages each group, chatroom and ultra
/// group carries per second (``groupLoads``, by the relay's clock); one that carried
/// ``RelayConfiguration/groupMessageRate`` in the current second is busy, and its `PRIORITY_LOW`
/// messages are refused (1008) until the next second. `PRIORITY_HIGH`, `PRIORITY_NORMAL` and
/// unspecified ones are never refused for load: a live room's likes and floods of comments give
/// way, its gifts and announcements do not. One-to-one messages are not counted.
extension Router {
    /// Refuses `frame`, a message to `key` at `nowMs`, when it is `PRIORITY_LOW` and `key` is a busy
    /// group, chatroom or ultra group; checked before the message is stamped.
    func busyRefusal(_ frame: InboundFrame, in key: ConversationKey, atMs nowMs: Int64) -> Refusal? {
        let rate = configuration.groupMessageRate
        guard frame.priority == .low, rate > 0, let group = Self.loadKey(key) else { return nil }
        let carried = groupLoads[group].map { $0.second == nowMs / 1000 ? $0.messages : 0 } ?? 0
        guard carried >= rate else { return nil }
        return Refusal(
            RelayProtocol.AckError.conversationBusy,
            "busy: the conversation carried \(carried) messages this second; low-priority messages are refused past "
                + "\(rate) a second"
        )
    }

    /// Counts a message `key` carries at `nowMs` (one that was accepted).
    func countCarried(in key: ConversationKey, atMs nowMs: Int64) {
        guard configuration.groupMessageRate > 0, let group = Self.loadKey(key) else { return }
        let second = nowMs / 1000
        var load = groupLoads[group] ?? GroupLoad(second: second, messages: 0)
        if load.second != second { load = GroupLoad(second: second, messages: 0) }
        load.messages += 1
        groupLoads[group] = load
    }

    /// The key a conversation's load is counted under: the group, chatroom or ultra group (all of an
    /// ultra group's channels together); `nil` for a one-to-one conversation.
    private static func loadKey(_ key: ConversationKey) -> ConversationKey? {
        guard case .shared(let type, let target, _) = key else { return nil }
        return .shared(type, target, "")
    }

    /// Forgets the counts of the seconds before the one of `nowMs` (the sweep).
    func forgetGroupLoads(before nowMs: Int64) {
        guard !groupLoads.isEmpty else { return }
        let second = nowMs / 1000
        groupLoads = groupLoads.filter { $0.value.second >= second }
    }
}
#endif
