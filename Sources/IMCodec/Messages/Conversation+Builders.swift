extension Conversation {
    /// A one-to-one conversation with `userID`.
    public static func oneToOne(_ userID: String) -> Conversation {
        Conversation.with {
            $0.type = .oneToOne; $0.targetID = userID
        }
    }

    /// A group conversation.
    public static func group(_ groupID: String) -> Conversation {
        Conversation.with {
            $0.type = .group; $0.targetID = groupID
        }
    }
}
