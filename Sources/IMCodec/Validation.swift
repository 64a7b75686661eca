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
        public var description: String { rawValue }

        /// A merger combines more than ``ValidationLimits/maxMergerMessages`` messages.
        public static let mergerTooManyMessages = Rule(rawValue: "mergerTooManyMessages")
        /// Mergers nest deeper than ``ValidationLimits/maxMergerDepth`` layers.
        public static let mergerTooDeep = Rule(rawValue: "mergerTooDeep")
        /// A merger holds group tips (they cannot be forwarded).
        public static let mergerContainsGroupTips = Rule(rawValue: "mergerContainsGroupTips")
        /// A merger has neither inline messages nor a stored reference, or both.
        public static let mergerBody = Rule(rawValue: "mergerBody")
        /// More than ``ValidationLimits/maxAtUsers`` users are @-mentioned.
        public static let atListTooLong = Rule(rawValue: "atListTooLong")
        /// An @ mention outside a group conversation.
        public static let atOutsideGroup = Rule(rawValue: "atOutsideGroup")
        /// Targeted receivers outside a group conversation.
        public static let targetedReceiversOutsideGroup = Rule(rawValue: "targetedReceiversOutsideGroup")
        /// Group tips outside a group conversation.
        public static let groupTipsOutsideGroup = Rule(rawValue: "groupTipsOutsideGroup")
        /// A file above ``ValidationLimits/maxFileSize`` bytes.
        public static let fileTooLarge = Rule(rawValue: "fileTooLarge")
        /// A latitude outside -90...90 or a longitude outside -180...180 (or not a number).
        public static let locationOutOfRange = Rule(rawValue: "locationOutOfRange")
        /// A message without elements.
        public static let emptyElementChain = Rule(rawValue: "emptyElementChain")
        /// An element without content.
        public static let emptyElement = Rule(rawValue: "emptyElement")
        /// An element kind that must be alone in its chain (merger, group tips, sound, video, file)
        /// shares it with others.
        public static let elementMustBeAlone = Rule(rawValue: "elementMustBeAlone")
        /// A message has no conversation, or a conversation has no target where its type needs one.
        public static let missingConversation = Rule(rawValue: "missingConversation")
    }

    /// The broken rule.
    public let rule: Rule
    /// Where, as a path of field names from the validated value (e.g. `message.elements[1].file`).
    public let path: String
    /// What is wrong, for a person.
    public let message: String

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

    /// The default limits.
    public init() {}
}

extension Frame {
    /// Checks the product rules for the payload and reports every violation (empty when none).
    public func validate(limits: ValidationLimits = ValidationLimits()) -> [ValidationIssue] {
        var validator = Validator(limits: limits)
        switch payload {
        case .message(let message)?: validator.check(message, at: "message", mergerDepth: 0)
        case .edit(let edit)?:
            if let message = edit.newMessage { validator.check(message, at: "edit.newMessage", mergerDepth: 0) }
        case .historyResponse(let page)?:
            for (i, message) in page.messages.enumerated() {
                validator.check(message, at: "historyResponse.messages[\(i)]", mergerDepth: 0)
            }
        case .mergerPayload(let merged)?:
            validator.checkMerged(merged.messages, at: "mergerPayload.messages", mergerDepth: 1)
        default: break
        }
        return validator.issues
    }
}

extension Message {
    /// Checks the product rules and reports every violation (empty when none).
    public func validate(limits: ValidationLimits = ValidationLimits()) -> [ValidationIssue] {
        var validator = Validator(limits: limits)
        validator.check(self, at: "", mergerDepth: 0)
        return validator.issues
    }
}

private struct Validator {
    let limits: ValidationLimits
    var issues: [ValidationIssue] = []

    mutating func report(_ rule: ValidationIssue.Rule, _ path: String, _ message: String) {
        issues.append(ValidationIssue(rule: rule, path: path, message: message))
    }

    static func join(_ path: String, _ field: String) -> String { path.isEmpty ? field : path + "." + field }

    static func isGroupLike(_ type: ConversationType) -> Bool {
        type == .group || type == .chatroom || type == .ultraGroup
    }

    mutating func check(_ message: Message, at path: String, mergerDepth: Int) {
        let type = message.conversation?.type ?? .unspecified
        if message.conversation == nil || type == .unspecified {
            report(.missingConversation, path, "the message has no conversation type")
        } else if type != .system, message.conversation?.targetID.isEmpty ?? true {
            report(.missingConversation, Self.join(path, "conversation"), "a \(type.protoName) conversation needs a target id")
        }
        if let at = message.at {
            if !Self.isGroupLike(type) {
                report(.atOutsideGroup, Self.join(path, "at"), "@ mentions are only allowed in group conversations")
            }
            if at.userIDs.count > limits.maxAtUsers {
                report(.atListTooLong, Self.join(path, "at.userIDs"),
                       "\(at.userIDs.count) users are @-mentioned; at most \(limits.maxAtUsers) are allowed")
            }
        }
        if !message.targetReceivers.isEmpty && !Self.isGroupLike(type) {
            report(.targetedReceiversOutsideGroup, Self.join(path, "targetReceivers"),
                   "targeted receivers are only allowed in group conversations")
        }
        if message.elements.isEmpty {
            report(.emptyElementChain, Self.join(path, "elements"), "the message has no elements")
        }
        let chainLength = message.elements.count
        for (i, element) in message.elements.enumerated() {
            let elementPath = Self.join(path, "elements[\(i)]")
            guard let content = element.content else {
                report(.emptyElement, elementPath, "the element has no content")
                continue
            }
            switch content {
            case .merger, .groupTips, .sound, .video, .file:
                if chainLength > 1 {
                    report(.elementMustBeAlone, elementPath,
                           "a \(content.kind.protoName) element must be the only element of its message")
                }
            case .text, .custom, .image, .location, .face:
                break
            }
            switch content {
            case .file(let file) where file.size > limits.maxFileSize:
                report(.fileTooLarge, elementPath + ".file",
                       "the file is \(file.size) bytes; at most \(limits.maxFileSize) are allowed")
            case .location(let location):
                if !(-90.0...90.0).contains(location.latitude) || !(-180.0...180.0).contains(location.longitude) {
                    report(.locationOutOfRange, elementPath + ".location",
                           "latitude \(location.latitude) / longitude \(location.longitude) is not a place on Earth")
                }
            case .groupTips where !Self.isGroupLike(type):
                report(.groupTipsOutsideGroup, elementPath + ".groupTips", "group tips belong in group conversations")
            case .merger(let merger):
                let mergerPath = elementPath + ".merger"
                if merger.messages.isEmpty == (merger.ref == nil) {
                    report(.mergerBody, mergerPath,
                           "a merger holds its messages either inline or by reference, not \(merger.ref == nil ? "neither" : "both")")
                }
                checkMerged(merger.messages, at: mergerPath + ".messages", mergerDepth: mergerDepth + 1)
            default:
                break
            }
        }
    }

    mutating func checkMerged(_ messages: [Message], at path: String, mergerDepth: Int) {
        if mergerDepth > limits.maxMergerDepth {
            // Stop here: the layers below are not inspected (bounded recursion on any input).
            report(.mergerTooDeep, path, "mergers nest more than \(limits.maxMergerDepth) layers")
            return
        }
        if messages.count > limits.maxMergerMessages {
            report(.mergerTooManyMessages, path,
                   "the merger combines \(messages.count) messages; at most \(limits.maxMergerMessages) are allowed")
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
