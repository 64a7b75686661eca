/// Where a frame goes: the destination a server reads from ``Frame/View/route`` for every payload kind.
///
/// A frame's conversation does not always say where it goes. A read receipt carries the conversation
/// of the message it acknowledges: for a one-to-one message from Bob to Alice, ``Frame/View/targetID``
/// is "alice", the reader, while the receipt must go back to Bob, the sender of the referenced
/// message. `route` answers the question for each payload kind:
///
/// - `message`, `recall`, `edit`, `typing` and `delete` with scope "everyone": the conversation,
///   ``user(_:)``, ``group(_:)``, ``chatroom(_:)``, ``ultraGroup(_:channelID:)`` or ``system(_:)``;
/// - `receipt`: ``referencedSender(_:)``, back to the sender of the message it acknowledges;
/// - `receipts`: ``referencedSender(_:)`` when every receipt goes to one sender, else
///   ``eachReferencedSender``;
/// - `delete` with scope "only me" (or none) and `mark_read`: ``ownDevices(_:)``;
/// - `history_request`, `merger_payload` and `system_notice`: ``server``;
/// - `send_ack`, `history_response`, `group_read_members` and `c2c_read_receipt`: ``client``;
/// - no payload, a kind this schema does not know, or a kind whose conversation, reference or user
///   is missing: ``unroutable``.
///
/// ```swift
/// let decoder = WireDecoder()
/// switch try decoder.withFrameView(bytes, { $0.route }) {
/// case .user(let id), .referencedSender(let id): forward(bytes, toUser: id)
/// case .group(let id): fanOut(bytes, toGroup: id)
/// case .server: handle(bytes)
/// default: reject(bytes)
/// }
/// ```
public enum FrameRoute: Hashable, Sendable {
    /// To one user: the peer of a one-to-one conversation (the conversation's target id).
    case user(String)
    /// To the members of a group (the group id).
    case group(String)
    /// To the users present in a chatroom (the chatroom id).
    case chatroom(String)
    /// To the members of an ultra group's channel; an empty channel id means the whole ultra group.
    case ultraGroup(String, channelID: String)
    /// To the users of a system conversation, which only the server writes to (the target id, which
    /// may be empty).
    case system(String)
    /// Back to the sender of the message the frame refers to (that sender's user id): where a
    /// receipt goes, whoever wrote it. ``Frame/View/referencedSenderID`` gives the same id.
    case referencedSender(String)
    /// A receipt batch whose receipts go back to more than one sender, or that mixes message receipts
    /// with C2C read receipts: split it, each `MessageReceipt` to the sender of its `message`.
    case eachReferencedSender
    /// To the acting user's own devices only (the user id): a mark-read, or a delete whose scope is
    /// "only me" (or unset, which reaches no one else).
    case ownDevices(String)
    /// To the server only, forwarded to no user: a history request, a stored merger body, a system
    /// notice (a client's request, such as a login; notices the server writes go to the connection
    /// it writes them on).
    case server
    /// From the server to the client connection it answers or informs; the frame names no other
    /// destination: send acks and history responses (to the connection that asked), group
    /// read-member pages (to the client that asked, normally the message's sender) and C2C read
    /// receipts (which name the reader, not the peer the server delivers them to).
    case client
    /// Nowhere: the frame has no payload, one this schema version does not know, or lacks the
    /// conversation, reference or user the payload kind is routed by.
    case unroutable
}

extension FrameRoute {
    /// The route to `type`'s conversation `targetID` (and `channelID`), or ``unroutable`` when the
    /// type is unset or unknown or a user, group, chatroom or ultra group conversation has no target.
    /// - Parameters:
    ///   - type: The conversation type.
    ///   - targetID: The peer's user id, or the group, chatroom or ultra group id.
    ///   - channelID: The ultra group channel ("" for the whole ultra group and for other types).
    public init(conversationType type: ConversationType, targetID: String, channelID: String = "") {
        switch type {
        case .system: self = .system(targetID)
        case _ where targetID.isEmpty: self = .unroutable
        case .oneToOne: self = .user(targetID)
        case .group: self = .group(targetID)
        case .chatroom: self = .chatroom(targetID)
        case .ultraGroup: self = .ultraGroup(targetID, channelID: channelID)
        case .unspecified, .unrecognized: self = .unroutable
        }
    }
}
