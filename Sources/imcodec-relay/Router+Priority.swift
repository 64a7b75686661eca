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
    /// Counts `frame`, a message to `key` at `nowMs`, or refuses it: a `PRIORITY_LOW` message to a
    /// busy group, chatroom or ultra group.
    func carry(_ frame: InboundFrame, in key: ConversationKey, atMs nowMs: Int64) -> Refusal? {
        let rate = configuration.groupMessageRate
        guard rate > 0, case .shared = key else { return nil }
        let second = nowMs / 1000
        var load = groupLoads[key] ?? GroupLoad(second: second, messages: 0)
        if load.second != second { load = GroupLoad(second: second, messages: 0) }
        guard frame.priority != .low || load.messages < rate else {
            return Refusal(
                RelayProtocol.AckError.conversationBusy,
                "busy: the conversation carried \(load.messages) messages this second; low-priority messages are "
                    + "refused past \(rate) a second"
            )
        }
        load.messages += 1
        groupLoads[key] = load
        return nil
    }

    /// Forgets the counts of the seconds before the one of `nowMs` (the sweep).
    func forgetGroupLoads(before nowMs: Int64) {
        guard !groupLoads.isEmpty else { return }
        let second = nowMs / 1000
        groupLoads = groupLoads.filter { $0.value.second >= second }
    }
}
#endif
