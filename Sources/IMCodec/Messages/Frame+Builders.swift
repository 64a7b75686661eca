/// Builders for the events apps send most: read receipts and recalls.
extension Frame {
    /// A read receipt for `message`, sent by `reader`.
    public static func readReceipt(for message: MessageRef, by reader: String, timeMs: Int64? = nil) -> Frame {
        Frame(
            .receipt(
                MessageReceipt.with {
                    $0.kind = .read
                    $0.message = message
                    $0.userID = reader
                    $0.isPeerRead = true
                    $0.timeMs = timeMs ?? Message.nowMs()
                }
            )
        )
    }

    /// A recall (revoke) of `message` by `revoker`.
    public static func recall(
        _ message: MessageRef,
        by revoker: String,
        reason: String = "",
        timeMs: Int64? = nil
    )
        -> Frame
    {
        Frame(
            .recall(
                RecallEvent.with {
                    $0.message = message
                    $0.revokerID = revoker
                    $0.reason = reason
                    $0.timeMs = timeMs ?? Message.nowMs()
                }
            )
        )
    }
}
