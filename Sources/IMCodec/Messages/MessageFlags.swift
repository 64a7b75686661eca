/// The bits of ``Message/flags`` as a Swift option set (the schema's `MessageFlag` enum).
public struct MessageFlags: OptionSet, Sendable, Hashable {
    /// The bits, as on the wire.
    public let rawValue: UInt32

    /// Creates flags from wire bits.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// The sender asks receivers for read receipts.
    public static let needReadReceipt = MessageFlags(rawValue: 1 << 0)
    /// Does not add to the receiver's unread count.
    public static let excludedFromUnreadCount = MessageFlags(rawValue: 1 << 1)
    /// Does not become the conversation's last message.
    public static let excludedFromLastMessage = MessageFlags(rawValue: 1 << 2)
    /// Delivered only to users online now; never stored offline or pushed.
    public static let onlineUserOnly = MessageFlags(rawValue: 1 << 3)
    /// Kept in server-side roaming history.
    public static let saveToHistory = MessageFlags(rawValue: 1 << 4)
    /// Receivers may send delivery receipts for it.
    public static let deliveryReceiptEnabled = MessageFlags(rawValue: 1 << 5)
    /// The expansion map may change after sending.
    public static let supportExtension = MessageFlags(rawValue: 1 << 6)

    /// Every flag the schema defines.
    public static let all: MessageFlags = [
        .needReadReceipt, .excludedFromUnreadCount, .excludedFromLastMessage, .onlineUserOnly,
        .saveToHistory, .deliveryReceiptEnabled, .supportExtension,
    ]
}

extension Message {
    /// ``flags`` as an option set.
    public var messageFlags: MessageFlags {
        get { MessageFlags(rawValue: flags) }
        set { flags = newValue.rawValue }
    }
}
