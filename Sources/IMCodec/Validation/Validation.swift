/// One broken product rule found by `validate()`.
///
/// Validation is separate from decoding: a decoder accepts every well-formed frame, so a relay can
/// pass on what it does not judge; an app or a server that owns the rules calls `validate()`.
public struct ValidationIssue: Sendable, Hashable, CustomStringConvertible {
    /// Which rule is broken. A struct so that rules can be added without breaking `switch`es.
    public struct Rule: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        /// The rule's stable name.
        public let rawValue: String
        /// Creates a rule from its stable name.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The rule's stable name.
        public var description: String { rawValue }

        // Sources: "Tencent" is the Tencent Cloud IM message guide (English and Chinese editions),
        // "RongCloud" its message model (RCMessage), "QuickBlox" its messaging guide; "IMCodec" is a
        // product rule of this library, stated in the schema's comments (Schemas/imcodec/v1) and in
        // the Limits and Errors article.

        // MARK: Frame

        /// The frame carries no payload this schema version knows (an empty frame, versions only, or
        /// a payload kind added by a later version).
        ///
        /// Source: IMCodec. A frame is the unit that carries one payload (frame.proto); a frame
        /// without one gives the receiver nothing to act on.
        public static let missingPayload = Rule(rawValue: "missingPayload")
        /// The value's encoding would be refused by decoding with the default ``DecodingOptions``
        /// (too large, too deep, too many fields or too much decoded memory).
        ///
        /// Source: IMCodec. `validate()` encodes the value and decodes the bytes with the default
        /// options, so it never accepts a value the receiver's decoder refuses.
        public static let notDecodable = Rule(rawValue: "notDecodable")

        // MARK: Messages and elements

        /// A merger combines more than ``ValidationLimits/maxMergerMessages`` messages (inline, or
        /// as its `messageCount` says when they are stored by reference).
        ///
        /// Source: Tencent (a combined message holds up to 300 messages).
        public static let mergerTooManyMessages = Rule(rawValue: "mergerTooManyMessages")
        /// Mergers nest deeper than ``ValidationLimits/maxMergerDepth`` layers.
        ///
        /// Source: IMCodec (message.proto: at most 100 nested layers, the depth Tencent Cloud IM
        /// allows). 100 layers decode with the default options: see ``DecodingOptions/maxDepth``.
        public static let mergerTooDeep = Rule(rawValue: "mergerTooDeep")
        /// A merger holds group tips.
        ///
        /// Source: IMCodec. Group tips are notices a group's server writes into that group
        /// (Tencent: a group tip carries a group's system notification); forwarded elsewhere they
        /// would describe a group that is not there.
        public static let mergerContainsGroupTips = Rule(rawValue: "mergerContainsGroupTips")
        /// A merger (or a stored merger body) has neither inline messages nor a stored reference, or
        /// both.
        ///
        /// Source: IMCodec (message.proto: a merger's messages are inline, or stored separately and
        /// referenced by a MergerRef when `messages` is empty).
        public static let mergerBody = Rule(rawValue: "mergerBody")
        /// A merger's `messageCount` disagrees with its inline messages, or is 0 for stored ones.
        ///
        /// Source: IMCodec (message.proto: `message_count` is how many messages the merger holds,
        /// inline or stored).
        public static let mergerMessageCount = Rule(rawValue: "mergerMessageCount")
        /// A merger has no title or no abstracts.
        ///
        /// Source: Tencent (a combined message needs a title and abstracts: the chat shows only
        /// those until the user opens it).
        public static let mergerDisplay = Rule(rawValue: "mergerDisplay")
        /// More than ``ValidationLimits/maxAtUsers`` @ in one message, @ALL counted as one.
        ///
        /// Source: Tencent (at most 30 @ per message, @ALL included); IMCodec (message.proto AtInfo:
        /// at most 30 user ids).
        public static let atListTooLong = Rule(rawValue: "atListTooLong")
        /// An @ mention outside a group conversation.
        ///
        /// Source: Tencent (@ messages are group messages: "someone @ me" and "@ all members" are
        /// group features).
        public static let atOutsideGroup = Rule(rawValue: "atOutsideGroup")
        /// Targeted receivers outside a group or ultra-group conversation (a chatroom too), or in a
        /// Community group.
        ///
        /// Source: Tencent (a targeted group message goes to chosen members of a group, and is "not
        /// supported" in AVChatRoom, Tencent's chatroom; "The targeted group message feature is not
        /// available for Community and AVChatRoom groups"); RongCloud (`directedUserIds`, for groups
        /// and ultra groups).
        public static let targetedReceiversOutsideGroup = Rule(rawValue: "targetedReceiversOutsideGroup")
        /// Group tips outside a group conversation.
        ///
        /// Source: Tencent (a group tip carries a system notification in a group: joins, leaves,
        /// profile changes).
        public static let groupTipsOutsideGroup = Rule(rawValue: "groupTipsOutsideGroup")
        /// A file above ``ValidationLimits/maxFileSize`` bytes.
        ///
        /// Source: Tencent (a file message cannot exceed 100 MB).
        public static let fileTooLarge = Rule(rawValue: "fileTooLarge")
        /// A latitude outside -90...90 or a longitude outside -180...180 (or not a number).
        ///
        /// Source: Tencent (a location is a description, a longitude and a latitude); IMCodec
        /// (message.proto: WGS-84 degrees in those ranges).
        public static let locationOutOfRange = Rule(rawValue: "locationOutOfRange")
        /// A message without elements.
        ///
        /// Source: Tencent (a message's content is its chain of elements, one at least); IMCodec.
        public static let emptyElementChain = Rule(rawValue: "emptyElementChain")
        /// An element without content.
        ///
        /// Source: IMCodec (message.proto: every MessageElement holds one content kind).
        public static let emptyElement = Rule(rawValue: "emptyElement")
        /// An element kind that must be alone in its chain (merger, group tips, poll, call log) shares
        /// it with others, or a sound, video or file shares it with anything but text.
        ///
        /// Source: IMCodec. Tencent chains several elements (text and custom in its example); media
        /// that clients show as one bubble, mergers and group tips stand alone. QuickBlox sends text
        /// together with an attachment ("Image attachment" with `attachments`), so one sound, video
        /// or file may come with text.
        public static let elementMustBeAlone = Rule(rawValue: "elementMustBeAlone")
        /// A message, typing indicator, mark-read event, history request or page has no
        /// conversation, or a conversation has no target where its type needs one.
        ///
        /// Source: Tencent (a one-to-one message names the receiver's UserID, a group message the
        /// groupID); RongCloud (the target id is the peer, group, chatroom or ultra group id; system
        /// conversations need none).
        public static let missingConversation = Rule(rawValue: "missingConversation")

        // MARK: Receipts, events, acks, history

        /// A receipt, recall, edit, delete or group-read-members list does not say which message it
        /// is about: the reference is missing, or has neither `serverMsgUID` nor both `senderID`
        /// and `clientMsgID` (a delete that lists no message at all is reported here too).
        ///
        /// Source: IMCodec (common.proto: a receiver matches on `server_msg_uid`, else on
        /// `sender_id` and `client_msg_id`); Tencent (recall notifications and read receipts carry
        /// the message's id); QuickBlox (delivered, read and delete take message ids).
        public static let missingMessageRef = Rule(rawValue: "missingMessageRef")
        /// A receipt kind, delete scope or typing state is left `UNSPECIFIED`.
        ///
        /// Source: QuickBlox (delivered and read receipts are separate events; a delete must say
        /// whether it is for everyone; typing notifications are "typing" and "stopped");
        /// Tencent (delivery and read receipts).
        public static let unspecifiedEnum = Rule(rawValue: "unspecifiedEnum")
        /// An event does not say who acted: a C2C read receipt, typing indicator or mark-read event
        /// without `userID`, a recall without `revokerID`, an edit without `editorID`, a delete
        /// without `operatorID`.
        ///
        /// Source: Tencent (a C2C read receipt names the user who read; only conversation
        /// participants may modify a message; a sender recalls its own message); QuickBlox (the
        /// typing user is reported; only a dialog's owner deletes for everyone).
        public static let missingUserID = Rule(rawValue: "missingUserID")
        /// A message receipt names neither a user (one-to-one) nor a group, or carries group read
        /// counts without a group.
        ///
        /// Source: Tencent (V2TIMMessageReceipt: `userID` and `isPeerRead` for one-to-one receipts,
        /// `groupID` with `readCount` and `unreadCount` for group receipts).
        public static let receiptSubject = Rule(rawValue: "receiptSubject")
        /// A receipt batch holds no receipt.
        ///
        /// Source: IMCodec (receipts.proto: a batch is several receipts at once).
        public static let emptyReceiptBatch = Rule(rawValue: "emptyReceiptBatch")
        /// A C2C read receipt without a read time, or a mark-read event with neither a read time nor
        /// a read sequence number.
        ///
        /// Source: Tencent (a C2C read receipt carries the time up to which the peer has read:
        /// messages at or before it are read); IMCodec (events.proto: a conversation is marked read
        /// up to a time or a sequence number).
        public static let missingReadPosition = Rule(rawValue: "missingReadPosition")
        /// A mark-read event names a conversation and also says all conversations, or neither.
        ///
        /// Source: Tencent (one conversation is marked read with markC2CMessageAsRead or
        /// markGroupMessageAsRead, every conversation with markAllMessageAsRead); IMCodec
        /// (events.proto: with `all_conversations` the conversation is unset).
        public static let markReadScope = Rule(rawValue: "markReadScope")
        /// A system notice without its machine-readable `type`.
        ///
        /// Source: QuickBlox (system messages carry their notification type for the receiving
        /// app); IMCodec (events.proto: `type` is the notice's machine-readable kind).
        public static let missingNoticeType = Rule(rawValue: "missingNoticeType")
        /// A send ack without the `clientMsgID` of the message it answers.
        ///
        /// Source: IMCodec (events.proto: a SendAck is the server's answer to one sent message,
        /// which the sender knows by its client id until the server has assigned one).
        public static let missingClientMsgID = Rule(rawValue: "missingClientMsgID")
        /// A successful send ack (error code 0) without `serverMsgUID`, or a failed one with it.
        ///
        /// Source: RongCloud (only successfully sent messages have a message UID); Tencent (a
        /// failed send returns an error code such as 80001, 20007 or 20009).
        public static let sendAckServerUID = Rule(rawValue: "sendAckServerUID")
        /// A history request asks for 0 or more than ``ValidationLimits/maxHistoryPageSize``
        /// messages, or a history page holds more than that.
        ///
        /// Source: Tencent (history is pulled page by page, the page must not be large: 20 is
        /// recommended); QuickBlox (history pages default to 100 records); IMCodec (the limit).
        public static let historyPageSize = Rule(rawValue: "historyPageSize")
        /// A message in a history page belongs to another conversation than the page.
        ///
        /// Source: Tencent (history is pulled for one one-to-one or one group conversation);
        /// RongCloud (in a one-to-one conversation the target is the peer: the page's peer is the
        /// message's target or its sender).
        public static let historyConversationMismatch = Rule(rawValue: "historyConversationMismatch")
        /// A page that is not the last has no cursor for the next one: a history page with
        /// `finished` false and no `nextCursor`, or a group-read-members page with `finished` false
        /// and `nextSeq` 0.
        ///
        /// Source: Tencent (getGroupMessageReadMemberList returns `nextSeq` and `isFinished`, the
        /// next page is pulled from `nextSeq`); IMCodec (events.proto: the cursor of a page comes
        /// from the previous HistoryResponse).
        public static let missingNextCursor = Rule(rawValue: "missingNextCursor")
        /// An edit event without the message's new content.
        ///
        /// Source: Tencent (the modification callback delivers the modified message object);
        /// IMCodec (events.proto: `new_message` is the content after the edit).
        public static let missingEditedMessage = Rule(rawValue: "missingEditedMessage")
        /// An edit's new message is not the message its reference names (another server id, client
        /// id, sender, sequence number or conversation), or has `editVersion` 0.
        ///
        /// Source: Tencent (a modification changes a sent message and syncs it to every
        /// participant: it stays the same message); IMCodec (message.proto: `edit_version` is
        /// incremented by every edit, 0 only for a message never edited).
        public static let editedMessageMismatch = Rule(rawValue: "editedMessageMismatch")
        /// A C2C read receipt's or a mark-read event's read time is below 100,000,000,000 (March
        /// 1973 in milliseconds): almost certainly seconds.
        ///
        /// Source: IMCodec (common.proto: every time is epoch milliseconds); Tencent (the C2C read
        /// receipt's `timestamp` is in seconds: convert with `C2CReadReceipt(userID:tencentTimestamp:)`).
        public static let timeNotMilliseconds = Rule(rawValue: "timeNotMilliseconds")

        // MARK: Session layer

        /// A login without a user id, token or device id.
        ///
        /// Source: Tencent (login takes the UserID and its UserSig); RongCloud (connect takes the
        /// token the app server obtained); IMCodec (session.proto: the device id is the key of
        /// multi-device delivery).
        public static let loginCredentials = Rule(rawValue: "loginCredentials")
        /// A login result that succeeded (error code 0) without a session id, or failed with one or
        /// without saying why.
        ///
        /// Source: IMCodec (session.proto: a session id names the session that a successful login
        /// opened); Tencent (a failed call returns a code and a description).
        public static let loginResultSession = Rule(rawValue: "loginResultSession")
        /// A conversation listed twice in a login's `lastSeen`, a max-seq request or response.
        ///
        /// Source: IMCodec (session.proto: one highest seq per conversation).
        public static let duplicateConversation = Rule(rawValue: "duplicateConversation")
        /// A sync request whose range is empty or starts at seq 0 (seqs start at 1), or a sync
        /// response whose messages are not in strictly increasing seq order inside 1...maxSeq, or
        /// that has more without a `nextFromSeq` after its last message.
        ///
        /// Source: IMCodec (session.proto: a SyncResponse holds messages in seq order without
        /// duplicates, and is continued from next_from_seq); Tencent (messages are pulled page by
        /// page with a sequence cursor).
        public static let syncRange = Rule(rawValue: "syncRange")
        /// A presence update that is offline or away without a last-seen time.
        ///
        /// Source: IMCodec (session.proto: last_seen_ms is set with OFFLINE and AWAY).
        public static let presenceLastSeen = Rule(rawValue: "presenceLastSeen")
        /// A presence subscription with no user, or more than ``ValidationLimits/maxPresenceUsers``.
        ///
        /// Source: IMCodec (the limit bounds what one request makes the server track).
        public static let presenceSubscriptionSize = Rule(rawValue: "presenceSubscriptionSize")
        /// A join or leave of a conversation that is not a group, chatroom or ultra group.
        ///
        /// Source: RongCloud (chatrooms and ultra-group channels are joined and left; one-to-one and
        /// system conversations have no membership); Tencent (groups are joined and quit).
        public static let membershipConversation = Rule(rawValue: "membershipConversation")

        // MARK: Message features

        /// A reaction's emoji is empty, longer than ``ValidationLimits/maxEmojiScalars`` Unicode
        /// scalars or 32 UTF-8 bytes, or holds ASCII.
        ///
        /// Source: IMCodec (message.proto ReactionSummary: one emoji, which a flag, a skin tone or
        /// a ZWJ sequence makes up to 8 scalars); WhatsApp and Signal react with one emoji.
        public static let reactionEmoji = Rule(rawValue: "reactionEmoji")
        /// A reaction summary counts fewer reactions than it lists users, lists more than 10 users,
        /// or repeats an emoji of the same message.
        ///
        /// Source: IMCodec (message.proto ReactionSummary: the first users, at most 10; count is the
        /// total; one summary per emoji).
        public static let reactionSummary = Rule(rawValue: "reactionSummary")
        /// A poll without an id or a question, with fewer than 2 or more than
        /// ``ValidationLimits/maxPollOptions`` options, or with options that repeat an id or have no
        /// text.
        ///
        /// Source: WhatsApp (a poll has up to 12 options); IMCodec (message.proto PollElement: votes
        /// name options by id).
        public static let pollOptions = Rule(rawValue: "pollOptions")
        /// A vote or a poll update that names no poll or voter, repeats an option, closes without
        /// saying who closed it, or counts more votes for an option than voters.
        ///
        /// Source: IMCodec (events.proto PollVoteEvent, PollUpdate).
        public static let pollVote = Rule(rawValue: "pollVote")
        /// A mention range outside its text, empty, splitting a surrogate pair, or naming both a
        /// user and @all (or neither).
        ///
        /// Source: IMCodec (message.proto MentionRange: offsets count UTF-16 code units, as NSString,
        /// Signal and Telegram count them).
        public static let mentionRange = Rule(rawValue: "mentionRange")
        /// A link preview whose url is not http or https.
        ///
        /// Source: IMCodec (message.proto LinkPreview: the preview of a URL); a client opens it.
        public static let linkPreviewURL = Rule(rawValue: "linkPreviewURL")
        /// A disappearing message that expires at or before it was sent, or whose expiry disagrees
        /// with its timer; a disappearing timer longer than ``ValidationLimits/maxExpireAfterSeconds``.
        ///
        /// Source: IMCodec (message.proto: expire_at_ms = server_time_ms + expire_after_s); WhatsApp
        /// (timers of 24 hours, 7 days or 90 days).
        public static let expiry = Rule(rawValue: "expiry")
        /// A view-once message whose content is not an image, video or voice message.
        ///
        /// Source: WhatsApp (view once applies to photos, videos and voice messages).
        public static let viewOnceContent = Rule(rawValue: "viewOnceContent")
        /// `receivedStatus` sets bits that are not ``ReceivedStatusFlag`` values.
        ///
        /// Source: RongCloud (ReceivedStatus: read, listened, downloaded, retrieved).
        public static let receivedStatusBits = Rule(rawValue: "receivedStatusBits")
        /// A read-receipt request that names no message, or a read-members request for 0 or more
        /// than ``ValidationLimits/maxReadMembersPageSize`` members, or a read-members page whose
        /// profiles are not its member ids.
        ///
        /// Source: Tencent (getMessageReadReceipts takes messages; getGroupMessageReadMemberList
        /// pages at most 100 members; V2TIMGroupMemberInfo carries the member's nickname and face).
        public static let readMembersPage = Rule(rawValue: "readMembersPage")
        /// A stream sync page whose frames are not in increasing position order, lie past its
        /// `next_after_position`, or do not decode as frames.
        ///
        /// Source: session.proto (the user stream: each device sees every kept frame once, in
        /// position order), after Matrix's `next_batch` and XEP-0198's stanza counts.
        public static let streamPage = Rule(rawValue: "streamPage")
    }

    /// The broken rule.
    public let rule: Rule
    /// Where, as a path of field names from the validated value (e.g. `message.elements[1].file`).
    public let path: String
    /// What is wrong, for a person.
    public let message: String

    /// `path: message [rule]`.
    public var description: String { "\(path.isEmpty ? "" : path + ": ")\(message) [\(rule)]" }
}

/// The limits `validate()` applies, with the products' defaults (Tencent Cloud IM).
public struct ValidationLimits: Sendable, Hashable {
    /// Most messages one merger combines. Default 300.
    public var maxMergerMessages = 300
    /// Most nested merger layers. Default 100.
    public var maxMergerDepth = 100
    /// Most users one message @-mentions. Default 30.
    public var maxAtUsers = 30
    /// Largest file, in bytes. Default 100 MB (104,857,600).
    public var maxFileSize: UInt64 = 100 * 1024 * 1024
    /// Most messages one history request asks for and one history page holds (also sync pages).
    /// Default 100.
    public var maxHistoryPageSize = 100
    /// Most users a history request's sender or recipient filter names. Default 100.
    public var maxHistoryFilterUsers = 100
    /// Most members one read-members page asks for. Default 100 (Tencent).
    public var maxReadMembersPageSize = 100
    /// Most users one presence subscription names. Default 100.
    public var maxPresenceUsers = 100
    /// Most options a poll offers. Default 12 (WhatsApp).
    public var maxPollOptions = 12
    /// Most Unicode scalars in a reaction's emoji. Default 8.
    public var maxEmojiScalars = 8
    /// Longest disappearing-message timer, in seconds. Default 90 days (WhatsApp's longest).
    public var maxExpireAfterSeconds: UInt32 = 90 * 24 * 3600
    /// How long after sending a message its sender may recall it, in milliseconds. Default 2
    /// minutes (Tencent's default, which an app may change).
    public var recallWindowMs: Int64 = 2 * 60 * 1000
    /// Largest message content (its elements, encoded), in bytes. Default 12 KB (12,288: Tencent's
    /// message body limit). A product rule; the decoder's resource limits are ``DecodingOptions``.
    public var maxMessageBodySize = 12 * 1024
    /// Longest message extension key, in UTF-8 bytes. Default 100 (Tencent; RongCloud: 32).
    public var maxExtensionKeyBytes = 100
    /// Longest message extension value, in UTF-8 bytes. Default 1,024 (Tencent's 1 KB; RongCloud:
    /// 4,096).
    public var maxExtensionValueBytes = 1024
    /// Most keys one message's extension holds, and one extension update changes. Default 300
    /// (Tencent).
    public var maxExtensionKeys = 300
    /// Most users one blocklist change names. Default 100.
    public var maxBlocklistChangeUsers = 100

    /// The default limits.
    public init() {}
}

extension Frame {
    /// Checks the product rules for the payload and reports every violation (empty when none).
    ///
    /// Every payload kind has rules (see ``ValidationIssue/Rule``) except ping, pong, logout and
    /// request results, whose every value is well-formed; so does a frame without a payload. The
    /// frame is also encoded and the bytes decoded with the default ``DecodingOptions``: when that
    /// decode refuses them, ``ValidationIssue/Rule/notDecodable`` is reported, so a frame
    /// `validate()` accepts always decodes (a frame that needs a newer reader than this library is
    /// reported so too). That check costs one encode and one decode of the frame.
    public func validate(limits: ValidationLimits = ValidationLimits()) -> [ValidationIssue] {
        var validator = Validator(limits: limits)
        validator.check(self)
        validator.checkDecodable(self)
        return validator.issues
    }
}

extension Message {
    /// Checks the product rules and reports every violation (empty when none).
    ///
    /// As for ``Frame/validate(limits:)``, the message is also encoded and decoded (as a `Message`)
    /// with the default ``DecodingOptions``, and ``ValidationIssue/Rule/notDecodable`` reported when
    /// that fails. A frame adds a few bytes and one or two levels around a message, so validate the
    /// frame a message travels in with ``Frame/validate(limits:)``.
    public func validate(limits: ValidationLimits = ValidationLimits()) -> [ValidationIssue] {
        var validator = Validator(limits: limits)
        validator.check(self, at: "", mergerDepth: 0)
        validator.checkDecodable(self)
        return validator.issues
    }
}

struct Validator {
    let limits: ValidationLimits
    var issues: [ValidationIssue] = []

    mutating func report(_ rule: ValidationIssue.Rule, _ path: String, _ message: String) {
        issues.append(ValidationIssue(rule: rule, path: path, message: message))
    }

    static func join(_ path: String, _ field: String) -> String { path.isEmpty ? field : path + "." + field }

    static func isGroupLike(_ type: ConversationType) -> Bool {
        type == .group || type == .chatroom || type == .ultraGroup
    }

    // MARK: Decodability

    /// Encodes `value` and decodes the bytes as a receiver would, with the default options: exact,
    /// because it is the decoder itself that judges (size, depth, field count, decoded memory).
    mutating func checkDecodable<M: IMCodecMessage>(_ value: M) {
        let bytes = value.serializedBytes()
        do {
            _ = try M(serializedBytes: bytes, options: DecodingOptions())
        } catch {
            report(
                .notDecodable,
                "",
                "its \(bytes.count)-byte encoding is refused by decoding with the default options: "
                    + "\(error.code) (\(error.reason))"
            )
        }
    }

    // MARK: Frame payloads

    // One case per payload kind, each handing its payload to the check for its type: the switch is
    // as long as the schema's list of payloads (the compiler keeps it exhaustive), hence over 80 lines.
    mutating func check(_ frame: Frame) {
        guard let payload = frame.payload else {
            report(
                .missingPayload,
                "",
                frame.unknownFields.isEmpty
                    ? "the frame carries no payload"
                    : "the frame carries no payload this schema version knows (only unknown fields)"
            )
            return
        }
        switch payload {
        case .message(let message):
            check(message, at: "message", mergerDepth: 0)
        case .receipt(let receipt):
            check(receipt, at: "receipt")
        case .receipts(let batch):
            check(batch)
        case .c2cReadReceipt(let receipt):
            check(receipt, at: "c2cReadReceipt")
        case .groupReadMembers(let page):
            check(page)
        case .recall(let recall):
            check(recall)
        case .edit(let edit):
            check(edit)
        case .delete(let delete):
            check(delete)
        case .typing(let typing):
            check(typing)
        case .markRead(let event):
            check(event)
        case .systemNotice(let notice):
            check(notice)
        case .sendAck(let ack):
            check(ack)
        case .historyRequest(let request):
            check(request)
        case .historyResponse(let page):
            check(page)
        case .mergerPayload(let merged):
            check(merged)
        case .readReceiptRequest(let request):
            check(request)
        case .groupReadMembersRequest(let request):
            check(request)
        case .loginRequest(let login):
            check(login)
        case .loginResult(let result):
            check(result)
        case .streamSyncResponse(let page):
            check(page)
        case .streamSyncRequest, .streamAck:
            // Any position or limit is well-formed: nothing to judge.
            break
        case .ping, .pong, .logout, .requestResult:
            // Any id, time, session id or result is well-formed: nothing to judge.
            break
        case .kickedOffline(let kicked):
            check(kicked)
        case .maxSeqRequest(let request):
            checkConversations(request.conversations, at: "maxSeqRequest.conversations")
        case .maxSeqResponse(let response):
            checkSeqs(response.maxSeqs, at: "maxSeqResponse.maxSeqs")
        case .syncRequest(let request):
            check(request)
        case .syncResponse(let response):
            check(response)
        case .presence(let update):
            check(update)
        case .presenceSubscription(let subscription):
            check(subscription)
        case .membership(let change):
            check(change)
        case .reaction(let reaction):
            check(reaction)
        case .pin(let pin):
            check(pin)
        case .pollVote(let vote):
            check(vote)
        case .pollUpdate(let update):
            check(update)
        case .disappearingTimer(let timer):
            check(timer)
        case .receiveOption(let change):
            check(change)
        case .call(let call):
            check(call)
        case .streamChunk(let chunk):
            check(chunk)
        case .keyPublish(let publish):
            check(publish)
        case .keyFetchRequest(let request):
            check(request)
        case .keyFetchResponse(let response):
            check(response)
        case .conversationListRequest(let request):
            check(request)
        case .conversationList(let list):
            check(list)
        case .conversationUpdate(let update):
            check(update)
        case .extensionUpdate(let update):
            check(update)
        case .extensionFetchRequest(let request):
            check(request)
        case .extensionFetchResponse(let response):
            check(response)
        case .blocklistChange(let change):
            check(change)
        case .blocklistRequest:
            // An empty request: nothing to judge.
            break
        case .blocklistResponse(let response):
            check(response)
        }
    }

    // MARK: Events and pages checked in the frame switch above

    mutating func check(_ batch: ReceiptBatch) {
        if batch.receipts.isEmpty && batch.c2cReadReceipts.isEmpty {
            report(.emptyReceiptBatch, "receipts", "the receipt batch holds no receipt")
        }
        for (i, receipt) in batch.receipts.enumerated() { check(receipt, at: "receipts.receipts[\(i)]") }
        for (i, receipt) in batch.c2cReadReceipts.enumerated() {
            check(receipt, at: "receipts.c2cReadReceipts[\(i)]")
        }
    }

    mutating func check(_ page: GroupReadMembers) {
        checkRef(page.message, at: "groupReadMembers.message")
        if !page.finished && page.nextSeq == 0 {
            report(
                .missingNextCursor,
                "groupReadMembers.nextSeq",
                "the page is not the last one but has no next sequence number to continue from"
            )
        }
        if !page.members.isEmpty && page.members.map(\.userID) != page.memberIDs {
            report(
                .readMembersPage,
                "groupReadMembers.members",
                "the member profiles are not the page's member ids, in the same order"
            )
        }
    }

    mutating func check(_ recall: RecallEvent) {
        checkRef(recall.message, at: "recall.message")
        checkRecallWindow(recall)
        requireUser(recall.revokerID, at: "recall.revokerID", "the recall does not say who recalled the message")
    }

    mutating func check(_ delete: DeleteEvent) {
        if delete.messages.isEmpty {
            report(.missingMessageRef, "delete.messages", "the delete lists no message")
        }
        for (i, ref) in delete.messages.enumerated() { checkRef(ref, at: "delete.messages[\(i)]") }
        if delete.scope == .unspecified {
            report(.unspecifiedEnum, "delete.scope", "the delete is neither for everyone nor only for me")
        }
        requireUser(delete.operatorID, at: "delete.operatorID", "the delete does not say who deleted")
    }

    mutating func check(_ typing: TypingEvent) {
        checkConversation(typing.conversation, at: "typing.conversation")
        requireUser(typing.userID, at: "typing.userID", "the typing indicator does not say who is typing")
        if typing.state == .unspecified {
            report(.unspecifiedEnum, "typing.state", "the typing indicator is neither started nor stopped")
        }
    }

    mutating func check(_ notice: SystemNotice) {
        if notice.type.isEmpty {
            report(.missingNoticeType, "systemNotice.type", "the system notice has no machine-readable type")
        }
    }

    mutating func check(_ request: HistoryRequest) {
        checkConversation(request.conversation, at: "historyRequest.conversation")
        checkHistoryConversation(request)
        checkHistoryFilters(request)
        if request.count == 0 || Int(request.count) > limits.maxHistoryPageSize {
            report(
                .historyPageSize,
                "historyRequest.count",
                "\(request.count) messages are asked for; 1 to \(limits.maxHistoryPageSize) are allowed"
            )
        }
    }

    mutating func check(_ merged: MergerPayload) {
        if merged.messages.isEmpty {
            report(.mergerBody, "mergerPayload.messages", "a stored merger body holds no message")
        }
        checkMerged(merged.messages, at: "mergerPayload.messages", mergerDepth: 1)
    }

    mutating func check(_ page: StreamSyncResponse) {
        var previous: UInt64 = 0
        for (i, item) in page.frames.enumerated() {
            let path = "streamSyncResponse.frames[\(i)]"
            if item.position <= previous || item.position > page.nextAfterPosition {
                report(
                    .streamPage,
                    "\(path).position",
                    "position \(item.position) does not follow \(previous) up to next_after_position \(page.nextAfterPosition)"
                )
            }
            previous = item.position
            do {
                _ = try Frame(serializedBytes: item.frame, options: DecodingOptions(acceptsNewerFrames: true))
            } catch {
                report(.streamPage, "\(path).frame", "the frame does not decode: \(error.code) (\(error.reason))")
            }
        }
    }

    mutating func check(_ kicked: KickedOffline) {
        if kicked.reason == .unspecified {
            report(.unspecifiedEnum, "kickedOffline.reason", "the kick does not say why the session ended")
        }
    }

    mutating func check(_ pin: PinEvent) {
        checkConversation(pin.conversation, at: "pin.conversation")
        checkRef(pin.message, at: "pin.message")
        requireUser(pin.operatorID, at: "pin.operatorID", "the pin does not say who pinned the message")
    }

    mutating func check(_ timer: DisappearingTimerEvent) {
        checkConversation(timer.conversation, at: "disappearingTimer.conversation")
        requireUser(timer.operatorID, at: "disappearingTimer.operatorID", "the timer change does not say who set it")
        if timer.expireAfterS > limits.maxExpireAfterSeconds {
            report(
                .expiry,
                "disappearingTimer.expireAfterS",
                "a timer of \(timer.expireAfterS) s; at most \(limits.maxExpireAfterSeconds) s are allowed"
            )
        }
    }

    mutating func check(_ change: ReceiveOptionChange) {
        checkConversation(change.conversation, at: "receiveOption.conversation")
        if change.option == .unspecified {
            report(.unspecifiedEnum, "receiveOption.option", "the receive option is not set")
        }
    }

    /// A reference must exist and identify a message: by server id, or by sender and client id.
    mutating func checkRef(_ ref: MessageRef?, at path: String) {
        guard let ref else {
            report(.missingMessageRef, path, "no message reference")
            return
        }
        if ref.serverMsgUID.isEmpty && (ref.senderID.isEmpty || ref.clientMsgID.isEmpty) {
            report(
                .missingMessageRef,
                path,
                "the reference identifies no message: it needs serverMsgUID, or senderID and clientMsgID"
            )
        }
    }

    mutating func requireUser(_ userID: String, at path: String, _ message: String) {
        if userID.isEmpty { report(.missingUserID, path, message) }
    }

    /// A conversation must exist, have a type, and a target unless it is a system conversation.
    mutating func checkConversation(_ conversation: Conversation?, at path: String) {
        guard let conversation, conversation.type != .unspecified else {
            report(.missingConversation, path, "no conversation type")
            return
        }
        if conversation.type != .system && conversation.targetID.isEmpty {
            report(.missingConversation, path, "a \(conversation.type.protoName) conversation needs a target id")
        }
    }

    mutating func check(_ receipt: MessageReceipt, at path: String) {
        if receipt.kind == .unspecified {
            report(.unspecifiedEnum, Self.join(path, "kind"), "the receipt is neither a delivery nor a read receipt")
        }
        checkRef(receipt.message, at: Self.join(path, "message"))
        if receipt.userID.isEmpty && receipt.groupID.isEmpty {
            report(.receiptSubject, path, "the receipt names neither the user nor the group it is about")
        } else if receipt.groupID.isEmpty && (receipt.readCount != 0 || receipt.unreadCount != 0) {
            report(.receiptSubject, Self.join(path, "groupID"), "read and unread counts belong to group receipts")
        }
    }

    mutating func check(_ receipt: C2CReadReceipt, at path: String) {
        requireUser(receipt.userID, at: Self.join(path, "userID"), "the read receipt does not say who read")
        if receipt.readTimeMs <= 0 {
            report(.missingReadPosition, Self.join(path, "readTimeMs"), "the read receipt has no read time")
        } else {
            checkMilliseconds(receipt.readTimeMs, at: Self.join(path, "readTimeMs"))
        }
    }

    mutating func check(_ edit: EditEvent) {
        checkRef(edit.message, at: "edit.message")
        requireUser(edit.editorID, at: "edit.editorID", "the edit does not say who edited the message")
        guard let message = edit.newMessage else {
            report(.missingEditedMessage, "edit.newMessage", "the edit has no new content")
            return
        }
        check(message, at: "edit.newMessage", mergerDepth: 0)
        if message.editVersion == 0 {
            report(.editedMessageMismatch, "edit.newMessage.editVersion", "an edited message has edit version 1 or up")
        }
        guard let ref = edit.message else { return }
        var differs: [String] = []
        if !ref.serverMsgUID.isEmpty && ref.serverMsgUID != message.serverMsgUID { differs.append("serverMsgUID") }
        if !ref.clientMsgID.isEmpty && ref.clientMsgID != message.clientMsgID { differs.append("clientMsgID") }
        if !ref.senderID.isEmpty && ref.senderID != message.senderID { differs.append("senderID") }
        if ref.seq != 0 && ref.seq != message.seq { differs.append("seq") }
        if let conversation = ref.conversation, conversation != message.conversation { differs.append("conversation") }
        if !differs.isEmpty {
            report(
                .editedMessageMismatch,
                "edit.newMessage",
                "the new message is not the referenced one: \(differs.joined(separator: ", ")) differ"
            )
        }
    }

    mutating func check(_ event: MarkReadEvent) {
        requireUser(event.userID, at: "markRead.userID", "the mark-read event does not say whose messages are read")
        if event.allConversations {
            if event.conversation != nil {
                report(.markReadScope, "markRead.conversation", "a mark-read of all conversations names none")
            }
        } else if event.conversation == nil {
            report(.markReadScope, "markRead", "the mark-read event names no conversation and not all conversations")
        } else {
            checkConversation(event.conversation, at: "markRead.conversation")
        }
        if event.readTimeMs <= 0 && event.readSeq == 0 {
            report(.missingReadPosition, "markRead", "the mark-read event has neither a read time nor a read sequence")
        } else if event.readTimeMs > 0 {
            checkMilliseconds(event.readTimeMs, at: "markRead.readTimeMs")
        }
    }

    mutating func check(_ ack: SendAck) {
        if ack.clientMsgID.isEmpty {
            report(.missingClientMsgID, "sendAck.clientMsgID", "the ack does not say which sent message it answers")
        }
        if ack.errorCode == 0 && ack.serverMsgUID.isEmpty {
            report(.sendAckServerUID, "sendAck.serverMsgUID", "a successful send has a server-assigned message id")
        } else if ack.errorCode != 0 && !ack.serverMsgUID.isEmpty {
            report(
                .sendAckServerUID,
                "sendAck.serverMsgUID",
                "a failed send (error \(ack.errorCode)) has no server-assigned message id"
            )
        }
    }

    mutating func check(_ page: HistoryResponse) {
        checkPage(page.conversation, page.messages, at: "historyResponse")
        if !page.finished && page.nextCursor.isEmpty {
            report(
                .missingNextCursor,
                "historyResponse.nextCursor",
                "the page is not the last one but has no cursor for the next"
            )
        }
    }

    /// A page of one conversation's messages (history, sync): its conversation, at most
    /// ``ValidationLimits/maxHistoryPageSize`` messages, each valid and of that conversation.
    mutating func checkPage(_ conversation: Conversation?, _ messages: [Message], at name: String) {
        checkConversation(conversation, at: "\(name).conversation")
        if messages.count > limits.maxHistoryPageSize {
            report(
                .historyPageSize,
                "\(name).messages",
                "the page holds \(messages.count) messages; at most \(limits.maxHistoryPageSize) are allowed"
            )
        }
        for (i, message) in messages.enumerated() {
            let path = "\(name).messages[\(i)]"
            check(message, at: path, mergerDepth: 0)
            if let conversation, let other = message.conversation,
                !Self.sameConversation(page: conversation, message: other, sender: message.senderID)
            {
                report(
                    .historyConversationMismatch,
                    Self.join(path, "conversation"),
                    "the message belongs to another conversation than the page"
                )
            }
        }
    }

    /// In a one-to-one page the peer is the message's target (a message to the peer) or its
    /// sender (a message from the peer, whose target is the reader); elsewhere the target and
    /// channel must be the page's.
    static func sameConversation(page: Conversation, message: Conversation, sender: String) -> Bool {
        guard page.type == message.type else { return false }
        if page.type == .oneToOne {
            return message.targetID == page.targetID || sender == page.targetID
        }
        return message.targetID == page.targetID && message.channelID == page.channelID
    }

    // MARK: Messages

    mutating func check(_ message: Message, at path: String, mergerDepth: Int) {
        checkConversation(message, at: path)
        if message.elements.isEmpty {
            report(.emptyElementChain, Self.join(path, "elements"), "the message has no elements")
        }
        checkFeatures(message, at: path)
        checkExpansion(message, at: path)
        checkElements(message, at: path, mergerDepth: mergerDepth)
    }

    /// The conversation, @ mentions, body size, group kind and targeted receivers of a message.
    private mutating func checkConversation(_ message: Message, at path: String) {
        let type = message.conversation?.type ?? .unspecified
        if message.conversation == nil || type == .unspecified {
            report(.missingConversation, path, "the message has no conversation type")
        } else if type != .system, message.conversation?.targetID.isEmpty ?? true {
            report(
                .missingConversation,
                Self.join(path, "conversation"),
                "a \(type.protoName) conversation needs a target id"
            )
        }
        if message.at != nil, !Self.isGroupLike(type) {
            report(.atOutsideGroup, Self.join(path, "at"), "@ mentions are only allowed in group conversations")
        }
        checkAt(message, at: path)
        checkBody(message, at: path)
        checkGroupKind(message.conversation, at: Self.join(path, "conversation"))
        if !message.targetReceivers.isEmpty && message.conversation?.groupKind == .community {
            report(
                .targetedReceiversOutsideGroup,
                Self.join(path, "targetReceivers"),
                "targeted messages are not available in Community groups"
            )
        } else if !message.targetReceivers.isEmpty && type != .group && type != .ultraGroup {
            report(
                .targetedReceiversOutsideGroup,
                Self.join(path, "targetReceivers"),
                "targeted receivers are only allowed in group and ultra-group conversations, not chatrooms"
            )
        }
    }

    /// Each element of a message: alone where it must be, its content's own rules.
    private mutating func checkElements(_ message: Message, at path: String, mergerDepth: Int) {
        let type = message.conversation?.type ?? .unspecified
        let chainLength = message.elements.count
        let nonText = message.elements.count(where: { $0.content?.kind != .text })
        for (i, element) in message.elements.enumerated() {
            let elementPath = Self.join(path, "elements[\(i)]")
            guard let content = element.content else {
                report(.emptyElement, elementPath, "the element has no content")
                continue
            }
            switch content {
            case .merger, .groupTips, .poll, .callLog:
                if chainLength > 1 {
                    report(
                        .elementMustBeAlone,
                        elementPath,
                        "a \(content.kind.protoName) element must be the only element of its message"
                    )
                }
            case .sound, .video, .file:
                // QuickBlox sends text together with an attachment: text may go with one.
                if nonText > 1 {
                    report(
                        .elementMustBeAlone,
                        elementPath,
                        "a \(content.kind.protoName) element shares its message with text elements only"
                    )
                }
            case .text, .custom, .image, .location, .face, .sticker, .contactCard, .buttons, .stream, .encrypted:
                break
            }
            checkContent(content, chainLength: chainLength, at: elementPath)
            switch content {
            case .file(let file) where file.size > limits.maxFileSize:
                report(
                    .fileTooLarge,
                    elementPath + ".file",
                    "the file is \(file.size) bytes; at most \(limits.maxFileSize) are allowed"
                )
            case .location(let location):
                if !(-90.0...90.0).contains(location.latitude) || !(-180.0...180.0).contains(location.longitude) {
                    report(
                        .locationOutOfRange,
                        elementPath + ".location",
                        "latitude \(location.latitude) / longitude \(location.longitude) is not a place on Earth"
                    )
                }
            case .groupTips(let tips):
                if !Self.isGroupLike(type) {
                    report(
                        .groupTipsOutsideGroup,
                        elementPath + ".groupTips",
                        "group tips belong in group conversations"
                    )
                }
                checkProfiles(tips, at: elementPath + ".groupTips")
            case .merger(let merger):
                check(merger, at: elementPath + ".merger", mergerDepth: mergerDepth + 1)
            case .text(let text):
                check(text, at: elementPath + ".text")
            case .poll(let poll):
                check(poll, at: elementPath + ".poll")
            default:
                break
            }
        }
    }

    mutating func check(_ merger: MergerElement, at path: String, mergerDepth: Int) {
        if merger.messages.isEmpty == (merger.ref == nil) {
            report(
                .mergerBody,
                path,
                "a merger holds its messages either inline or by reference, not "
                    + (merger.ref == nil ? "neither" : "both")
            )
        }
        if merger.title.isEmpty || merger.abstracts.isEmpty {
            report(.mergerDisplay, path, "a merger needs a title and abstracts for the chat to show")
        }
        if !merger.messages.isEmpty && Int(merger.messageCount) != merger.messages.count {
            report(
                .mergerMessageCount,
                Self.join(path, "messageCount"),
                "messageCount is \(merger.messageCount) but \(merger.messages.count) messages are inline"
            )
        } else if merger.messages.isEmpty && merger.ref != nil {
            if merger.messageCount == 0 {
                report(
                    .mergerMessageCount,
                    Self.join(path, "messageCount"),
                    "a stored merger must say how many messages it holds"
                )
            } else if Int(merger.messageCount) > limits.maxMergerMessages {
                report(
                    .mergerTooManyMessages,
                    Self.join(path, "messageCount"),
                    "the stored merger combines \(merger.messageCount) messages; "
                        + "at most \(limits.maxMergerMessages) are allowed"
                )
            }
        }
        checkMerged(merger.messages, at: path + ".messages", mergerDepth: mergerDepth)
    }

    mutating func checkMerged(_ messages: [Message], at path: String, mergerDepth: Int) {
        if mergerDepth > limits.maxMergerDepth {
            // Stop here: the layers below are not inspected (bounded recursion on any input).
            report(.mergerTooDeep, path, "mergers nest more than \(limits.maxMergerDepth) layers")
            return
        }
        if messages.count > limits.maxMergerMessages {
            report(
                .mergerTooManyMessages,
                path,
                "the merger combines \(messages.count) messages; at most \(limits.maxMergerMessages) are allowed"
            )
        }
        for (i, message) in messages.enumerated() {
            let messagePath = "\(path)[\(i)]"
            if message.elements.contains(where: { $0.content?.kind == .groupTips }) {
                report(.mergerContainsGroupTips, messagePath, "group tips cannot be forwarded in a merger")
            }
            check(message, at: messagePath, mergerDepth: mergerDepth)
        }
    }
}
