import IMCodec
import Testing

/// validate()'s rules for schema version 2: the session layer, the message features, the
/// read-receipt requests and the time unit.
@Suite("Product rules: session layer and message features")
struct SessionValidationTests {
    /// Every finding as `rule @ path`, sorted.
    func found(_ frame: Frame, limits: ValidationLimits = ValidationLimits()) -> [String] {
        frame.validate(limits: limits).map { "\($0.rule) @ \($0.path)" }.sorted()
    }

    func changed<T>(_ value: T, _ change: (inout T) -> Void) -> T {
        var copy = value
        change(&copy)
        return copy
    }

    @Test("the valid examples cover every payload kind")
    func everyKindHasAValidExample() {
        let kinds = Set(ValidFrames.frames.values.compactMap { $0.payload?.kind })
        #expect(kinds == Set(Frame.Payload.Kind.allCases))
    }

    @Test("a stream page: positions increase up to next_after_position, and every frame decodes")
    func streamPage() {
        let page = ValidFrames.streamSyncResponse
        #expect(found(Frame(.streamSyncResponse(page))).isEmpty)
        // Out of order, and past next_after_position.
        let reordered = changed(page) { $0.frames.reverse() }
        #expect(found(Frame(.streamSyncResponse(reordered))) == ["streamPage @ streamSyncResponse.frames[1].position"])
        let past = changed(page) { $0.nextAfterPosition = 43 }
        #expect(found(Frame(.streamSyncResponse(past))) == ["streamPage @ streamSyncResponse.frames[1].position"])
        // A frame that does not decode (a length past the end).
        let broken = changed(page) { $0.frames[0].frame = [0x52, 0x09, 0x0A] }
        #expect(found(Frame(.streamSyncResponse(broken))) == ["streamPage @ streamSyncResponse.frames[0].frame"])
    }

    @Test("login: user, token, device and platform; results open a session or say why not")
    func login() {
        let login = ValidFrames.loginRequest
        #expect(
            found(
                Frame(
                    .loginRequest(
                        changed(login) {
                            $0.token = ""; $0.deviceID = ""
                        }
                    )
                )
            )
                == ["loginCredentials @ loginRequest.deviceID", "loginCredentials @ loginRequest.token"]
        )
        #expect(
            found(Frame(.loginRequest(changed(login) { $0.platform = .unspecified })))
                == ["unspecifiedEnum @ loginRequest.platform"]
        )
        #expect(
            found(Frame(.loginRequest(changed(login) { $0.lastSeen.append($0.lastSeen[0]) })))
                == ["duplicateConversation @ loginRequest.lastSeen[2]"]
        )
        #expect(found(Frame(.loginResult(LoginResult()))) == ["loginResultSession @ loginResult.sessionID"])
        #expect(
            found(
                Frame(
                    .loginResult(
                        LoginResult.with {
                            $0.errorCode = 1; $0.sessionID = "s"
                        }
                    )
                )
            )
                == ["loginResultSession @ loginResult.sessionID"]
        )
        #expect(
            found(Frame(.loginResult(LoginResult.with { $0.errorCode = 1 })))
                == ["loginResultSession @ loginResult.errorDescription"]
        )
        #expect(found(Frame(.kickedOffline(KickedOffline()))) == ["unspecifiedEnum @ kickedOffline.reason"])
    }

    @Test("sync: a range from seq 1, 1 to 100 a page, pages in seq order, more only with a next seq")
    func sync() {
        let request = ValidFrames.syncRequest
        #expect(found(Frame(.syncRequest(changed(request) { $0.fromSeq = 0 }))) == ["syncRange @ syncRequest.fromSeq"])
        #expect(found(Frame(.syncRequest(changed(request) { $0.toSeq = 3 }))) == ["syncRange @ syncRequest.toSeq"])
        #expect(
            found(Frame(.syncRequest(changed(request) { $0.limit = 101 }))) == ["historyPageSize @ syncRequest.limit"]
        )
        #expect(
            found(Frame(.syncRequest(changed(request) { $0.conversation = nil })))
                == ["missingConversation @ syncRequest.conversation"]
        )
        let page = ValidFrames.syncResponse
        #expect(
            found(Frame(.syncResponse(changed(page) { $0.messages.reverse() })))
                == ["syncRange @ syncResponse.messages[1].seq"]
        )
        #expect(
            found(Frame(.syncResponse(changed(page) { $0.maxSeq = 131 })))
                == ["syncRange @ syncResponse.messages[1].seq"]
        )
        #expect(
            found(Frame(.syncResponse(changed(page) { $0.nextFromSeq = 132 })))
                == ["syncRange @ syncResponse.nextFromSeq"]
        )
        #expect(
            found(Frame(.syncResponse(changed(page) { $0.messages[1].conversation = ValidFrames.c2c })))
                == ["historyConversationMismatch @ syncResponse.messages[1].conversation"]
        )
        let many = changed(page) { page in
            page.messages = (1...101).map { seq in changed(ValidFrames.message()) { $0.seq = UInt64(seq) } }
            page.nextFromSeq = 102
            page.maxSeq = 200
        }
        #expect(found(Frame(.syncResponse(many))) == ["historyPageSize @ syncResponse.messages"])
        #expect(
            found(Frame(.maxSeqRequest(MaxSeqRequest.with { $0.conversations = [.group("g"), .group("g")] })))
                == ["duplicateConversation @ maxSeqRequest.conversations[1]"]
        )
    }

    @Test("presence: a user and a status, last seen when offline or away; subscriptions of 1 to 100 users")
    func presence() {
        #expect(
            found(Frame(.presence(changed(ValidFrames.presence) { $0.lastSeenMs = 0 })))
                == ["presenceLastSeen @ presence.lastSeenMs"]
        )
        #expect(
            found(Frame(.presence(PresenceUpdate.with { $0.status = .online })))
                == ["missingUserID @ presence.userID"]
        )
        #expect(
            found(Frame(.presence(PresenceUpdate.with { $0.userID = "a" }))) == ["unspecifiedEnum @ presence.status"]
        )
        #expect(
            found(Frame(.presenceSubscription(PresenceSubscription.with { $0.action = .subscribe })))
                == ["presenceSubscriptionSize @ presenceSubscription.userIDs"]
        )
        let crowd = PresenceSubscription.with {
            $0.action = .unsubscribe; $0.userIDs = (0...100).map { "u\($0)" }
        }
        #expect(
            found(Frame(.presenceSubscription(crowd))) == ["presenceSubscriptionSize @ presenceSubscription.userIDs"]
        )
        #expect(
            found(
                Frame(.presenceSubscription(crowd)),
                limits: changed(ValidationLimits()) { $0.maxPresenceUsers = 101 }
            ) == []
        )
    }

    @Test("join and leave: groups, chatrooms and ultra groups only, with an action")
    func membership() {
        #expect(
            found(
                Frame(
                    .membership(
                        MembershipChange.with {
                            $0.action = .join; $0.conversation = .oneToOne("bob")
                        }
                    )
                )
            )
                == ["membershipConversation @ membership.conversation"]
        )
        #expect(
            found(Frame(.membership(MembershipChange.with { $0.conversation = .group("g") })))
                == ["unspecifiedEnum @ membership.action"]
        )
        let channel = Conversation.with {
            $0.type = .ultraGroup; $0.targetID = "ug"; $0.channelID = "news"
        }
        #expect(
            found(
                Frame(
                    .membership(
                        MembershipChange.with {
                            $0.action = .leave; $0.conversation = channel
                        }
                    )
                )
            ) == []
        )
    }

    @Test("reactions: one emoji, an action, and summaries that add up")
    func reactions() {
        let reaction = ValidFrames.reaction
        for bad in ["", "ok", "👍x", "👍🏽👍🏽👍🏽👍🏽👍🏽", "🏳️‍🌈🏳️‍🌈🏳️‍🌈"] {
            #expect(
                found(
                    Frame(
                        .reaction(
                            changed(reaction) {
                                $0.emoji = bad; $0.summary = []
                            }
                        )
                    )
                )
                    == ["reactionEmoji @ reaction.emoji"],
                "\(bad)"
            )
        }
        for good in ["❤️", "👨‍👩‍👧‍👦", "🇯🇵", "🏳️‍🌈"] {
            #expect(
                found(
                    Frame(
                        .reaction(
                            changed(reaction) {
                                $0.emoji = good; $0.summary = []
                            }
                        )
                    )
                ) == [],
                "\(good)"
            )
        }
        #expect(
            found(Frame(.reaction(changed(reaction) { $0.action = .unspecified }))) == [
                "unspecifiedEnum @ reaction.action"
            ]
        )
        #expect(
            found(Frame(.reaction(changed(reaction) { $0.summary[0].count = 1 })))
                == ["reactionSummary @ reaction.summary[0]"]
        )
        #expect(
            found(Frame(.reaction(changed(reaction) { $0.summary.append($0.summary[0]) })))
                == ["reactionSummary @ reaction.summary[1]"]
        )
        let eleven = ReactionSummary.with {
            $0.emoji = "🎉"; $0.count = 11; $0.userIDs = (0..<11).map { "u\($0)" }
        }
        #expect(
            found(Frame(changed(ValidFrames.message()) { $0.reactions = [eleven] }))
                == ["reactionSummary @ message.reactions[0]"]
        )
    }

    @Test("mention ranges lie inside the text in UTF-16 code units, whole scalars, a user or @all")
    func mentions() {
        // "👋 @Alice" : 👋 is 2 UTF-16 code units (4 UTF-8 bytes); @Alice starts at 3.
        func frame(_ ranges: [MentionRange], text: String = "👋 @Alice") -> Frame {
            Frame(
                Message(
                    from: "a",
                    in: .group("g"),
                    elements: [
                        MessageElement.with {
                            $0.content = .text(
                                TextElement.with {
                                    $0.text = text; $0.mentions = ranges
                                }
                            )
                        }
                    ]
                )
            )
        }
        func range(_ offset: UInt32, _ length: UInt32, user: String = "alice", all: Bool = false) -> MentionRange {
            MentionRange.with {
                $0.offset = offset; $0.length = length; $0.userID = user; $0.all = all
            }
        }
        let path = "mentionRange @ message.elements[0].text.mentions[0]"
        #expect(found(frame([range(3, 6)])) == [])
        #expect(found(frame([range(5, 6)])) == [path], "UTF-8 offsets are not UTF-16 offsets: 5+6 runs past the text")
        #expect(found(frame([range(1, 2)])) == [path], "starts inside the surrogate pair of 👋")
        #expect(found(frame([range(0, 1)])) == [path], "ends inside the surrogate pair of 👋")
        #expect(found(frame([range(0, 2)])) == [], "the whole 👋")
        #expect(found(frame([range(3, 0)])) == [path])
        #expect(found(frame([range(UInt32.max, 2)])) == [path])
        #expect(found(frame([range(3, 6, user: "")])) == [path])
        #expect(found(frame([range(3, 6, all: true)])) == [path])
        #expect(found(frame([range(3, 6, user: "", all: true)])) == [])
    }

    @Test("polls: 2 to 12 distinct options; votes and results consistent; link previews are http(s)")
    func pollsAndPreviews() {
        #expect(found(ValidFrames.frames["poll"]!) == [])
        let one = changed(ValidFrames.poll) {
            guard case .poll(var poll)? = $0.elements[0].content else { return }
            poll.options = [poll.options[0], poll.options[0]]
            poll.question = ""
            $0.elements[0].content = .poll(poll)
        }
        #expect(
            found(Frame(one)) == [
                "pollOptions @ message.elements[0].poll", "pollOptions @ message.elements[0].poll.options[1]",
            ]
        )
        let thirteen = changed(ValidFrames.poll) {
            guard case .poll(var poll)? = $0.elements[0].content else { return }
            poll.options = (1...13).map { id in
                PollOption.with {
                    $0.id = UInt32(id); $0.text = "\(id)"
                }
            }
            $0.elements[0].content = .poll(poll)
        }
        #expect(found(Frame(thirteen)) == ["pollOptions @ message.elements[0].poll.options"])
        #expect(
            found(Frame(changed(ValidFrames.poll) { $0.elements.append(.text("and")) }))
                == ["elementMustBeAlone @ message.elements[0]"]
        )
        #expect(
            found(Frame(.pollVote(changed(ValidFrames.pollVote) { $0.optionIDs = [1, 1] })))
                == ["pollVote @ pollVote.optionIDs"]
        )
        #expect(
            found(Frame(.pollUpdate(changed(ValidFrames.pollUpdate) { $0.closedBy = "" })))
                == ["pollVote @ pollUpdate.closedBy"]
        )
        #expect(
            found(Frame(.pollUpdate(changed(ValidFrames.pollUpdate) { $0.voterCount = 2 })))
                == ["pollVote @ pollUpdate.results[1]"]
        )
        let preview = Message(
            from: "a",
            in: .group("g"),
            elements: [
                MessageElement.with {
                    $0.content = .text(
                        TextElement.with {
                            $0.text = "see"; $0.linkPreviews = [LinkPreview.with { $0.url = "javascript:alert(1)" }]
                        }
                    )
                }
            ]
        )
        #expect(found(Frame(preview)) == ["linkPreviewURL @ message.elements[0].text.linkPreviews[0].url"])
    }

    @Test("disappearing and view-once messages: expiry after sending, matching the timer; media only")
    func expiryAndViewOnce() {
        let sent = ValidFrames.message()
        let disappearing = changed(sent) {
            $0.expireAfterS = 60; $0.expireAtMs = $0.serverTimeMs + 60_000
        }
        #expect(found(Frame(disappearing)) == [])
        #expect(Frame(disappearing).minReaderVersion == 2, "a version-1 reader would keep it")
        #expect(
            found(Frame(changed(disappearing) { $0.expireAtMs = $0.serverTimeMs })) == ["expiry @ message.expireAtMs"]
        )
        #expect(found(Frame(changed(disappearing) { $0.expireAtMs += 1 })) == ["expiry @ message.expireAtMs"])
        #expect(
            found(
                Frame(
                    changed(disappearing) {
                        $0.expireAfterS = 90 * 86_400 + 1; $0.expireAtMs = 0
                    }
                )
            )
                == ["expiry @ message.expireAfterS"]
        )
        #expect(
            found(
                Frame(
                    .disappearingTimer(
                        DisappearingTimerEvent.with {
                            $0.conversation = .group("g"); $0.operatorID = "a"; $0.expireAfterS = 90 * 86_400 + 1
                        }
                    )
                )
            ) == ["expiry @ disappearingTimer.expireAfterS"]
        )
        #expect(found(Frame(changed(sent) { $0.viewOnce = true })) == ["viewOnceContent @ message.viewOnce"])
        let image = Message.image(
            from: "a",
            in: .oneToOne("b"),
            format: .jpg,
            renditions: [
                ImageInfo(type: .original, uuid: "i", size: 1, width: 1, height: 1, url: "https://x/i")
            ]
        )
        #expect(found(Frame(changed(image) { $0.viewOnce = true })) == [])
        #expect(Frame(changed(image) { $0.viewOnce = true }).minReaderVersion == 2)
        #expect(Frame(image).minReaderVersion == 1)
    }

    @Test("received status bits, thread roots, read-receipt requests and read-member pages")
    func vendorDetails() {
        #expect(found(Frame(changed(ValidFrames.message()) { $0.receivedStatus = 1 | 2 | 4 | 8 })) == [])
        #expect(
            found(Frame(changed(ValidFrames.message()) { $0.receivedStatus = 16 }))
                == ["receivedStatusBits @ message.receivedStatus"]
        )
        #expect(
            found(Frame(changed(ValidFrames.message()) { $0.threadRoot = MessageRef() }))
                == ["missingMessageRef @ message.threadRoot"]
        )
        #expect(
            found(Frame(.readReceiptRequest(ReadReceiptRequest()))) == ["readMembersPage @ readReceiptRequest.messages"]
        )
        #expect(
            found(
                Frame(
                    .groupReadMembersRequest(
                        GroupReadMembersRequest.with {
                            $0.message = ValidFrames.ref(); $0.filter = .read; $0.count = 101
                        }
                    )
                )
            ) == ["readMembersPage @ groupReadMembersRequest.count"]
        )
        let page = changed(ValidFrames.groupReadMembers) {
            $0.members = [
                GroupMemberInfo.with { $0.userID = "user_20003" }, GroupMemberInfo.with { $0.userID = "user_20001" },
            ]
        }
        #expect(found(Frame(.groupReadMembers(page))) == ["readMembersPage @ groupReadMembers.members"])
    }

    @Test("read times are milliseconds: Tencent's C2C seconds are converted, and caught when they are not")
    func timeUnits() {
        let seconds: Int64 = 1_732_188_100
        let converted = C2CReadReceipt(userID: "user_10086", tencentTimestamp: seconds)
        #expect(converted.readTimeMs == 1_732_188_100_000)
        #expect(converted.tencentTimestamp == seconds)
        #expect(found(Frame(.c2cReadReceipt(converted))) == [])
        let raw = C2CReadReceipt.with {
            $0.userID = "user_10086"; $0.readTimeMs = seconds
        }
        #expect(found(Frame(.c2cReadReceipt(raw))) == ["timeNotMilliseconds @ c2cReadReceipt.readTimeMs"])
        #expect(
            found(Frame(.markRead(changed(ValidFrames.markRead) { $0.readTimeMs = seconds })))
                == ["timeNotMilliseconds @ markRead.readTimeMs"]
        )
        #expect(C2CReadReceipt(userID: "u", tencentTimestamp: .max).readTimeMs == .max)
        #expect(C2CReadReceipt(userID: "u", tencentTimestamp: -1).tencentTimestamp == -1)
        #expect(C2CReadReceipt(userID: "u", tencentTimestamp: .min).tencentTimestamp == Int64.min / 1000 - 1)
        #expect(C2CReadReceipt.with { $0.readTimeMs = -1 }.tencentTimestamp == -1)
    }
}
