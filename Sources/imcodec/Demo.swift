#if Tools
import ArgumentParser
import Foundation
import IMCodec

struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Run the main job on built-in data: encode a realistic conversation, write it, read it back, check it.",
        discussion: """
            Builds a conversation (a C2C text, its send ack and read receipt, a group @ message and its \
            group receipt, an image, a multi-element chain, a merger holding a nested merger, a recall, \
            an edit, a rejected send; then a reconnect that resumes from the last seq held and fills the \
            gap with a sync, presence changes, a reaction, a thread reply and a poll; then a video call \
            (invite, accept, hang up, its call log) and an end-to-end encrypted message; then Bob's \
            conversation list, a pinned group with a draft, an extension update answering the poll, a \
            block, and the blocked sender's next message refused with 20007: 35 frames), encodes \
            every frame, writes them as varint-length-prefixed records to a file with a 36th frame that \
            needs a newer reader, reads the file back, routes each frame with the fast path (its "route:" \
            line is FrameView.route, such as .group("team-apollo") for a group message and \
            .referencedSender("alice") for a receipt of Alice's message), decodes it, checks it equals \
            what was written, validates it, shows that the last frame is refused, and prints a transcript \
            with byte sizes.
            """
    )

    @Option(name: .long, help: "Where to write the frames (default: a file in the temporary directory).")
    var output: String?

    func run() throws {
        let frames = DemoConversation.frames()
        // Last, a frame this reader must refuse: it needs the next schema version.
        let written = frames + [DemoConversation.fromTheFuture()]
        let path = output ?? FileManager.default.temporaryDirectory.appendingPathComponent("imcodec-demo.frames").path
        let stream = Delimited.serialize(written)
        guard FileManager.default.createFile(atPath: path, contents: Data(stream)) else {
            throw IMCodecError(code: .io, reason: "cannot write \(path)")
        }
        guard let file = FileManager.default.contents(atPath: path) else {
            throw IMCodecError(code: .io, reason: "cannot read \(path) back")
        }
        var transcript = DemoTranscript(written: written, forThisReader: frames.count)
        transcript.text =
            "IMCodec demo: \(written.count) frames (\(frames.count) for a schema-"
            + "\(Frame.currentSchemaVersion) reader, 1 that needs a schema-\(DemoConversation.nextVersion) reader), "
            + "\(stream.count) bytes written to \(path)\n\n"
        let bytes = [UInt8](file)
        var records = Delimited.RecordReader(bytes, maxLength: DecodingOptions().maxInputSize)
        var start = records.offset
        while let range = try records.next() {
            try transcript.read(bytes[range], prefixSize: range.lowerBound - start)
            start = records.offset
        }
        let allEqual = transcript.decoded == written
        transcript.text +=
            "Read back \(transcript.decoded.count) of \(written.count) frames from \(path): "
            + (allEqual ? "every frame decodes equal to what was encoded" : "MISMATCH") + "; "
            + (transcript.issues == 0 ? "no validation issues" : "\(transcript.issues) validation issue(s)") + "; "
            + "the frame for a schema-\(DemoConversation.nextVersion) reader was "
            + (transcript.refused == 1 ? "refused" : "NOT refused")
            + ".\n"
        writeStandardOutput(transcript.text)
        if !allEqual {
            throw InputRejected(message: "the frames read back differ from the frames written")
        }
        if transcript.refused != 1 {
            throw InputRejected(
                message: "a frame that needs a schema-\(DemoConversation.nextVersion) reader was not refused"
            )
        }
    }
}

/// The demo's transcript, one record at a time: each frame routed with the fast path, decoded,
/// compared with what was written and validated; the frame for a newer reader refused.
struct DemoTranscript {
    /// The frames written, in order.
    let written: [Frame]
    /// How many of them (the first ones) this reader acts on; the rest need a newer reader.
    let forThisReader: Int
    var text = ""
    /// The frames read back (those for a newer reader decoded with `acceptsNewerFrames`).
    var decoded: [Frame] = []
    var issues = 0
    var refused = 0
    private let router = WireDecoder()

    init(written: [Frame], forThisReader: Int) {
        self.written = written
        self.forThisReader = forThisReader
    }

    /// Adds record `decoded.count` (its body `record`, after a length prefix of `prefixSize` bytes)
    /// to the transcript.
    mutating func read(_ record: ArraySlice<UInt8>, prefixSize: Int) throws {
        let n = decoded.count
        guard n < forThisReader else { return try readNewer(record) }
        let route = try router.withFrameView(record) { view in
            "route: \(view.payloadKind?.protoName ?? "none") → \(FrameSummary.route(view.route))"
                + (view.senderID.isEmpty ? "" : " from \(view.senderID)")
                + (view.elementCount == 0
                    ? ""
                    : ", elements: "
                        + (0..<view.elementCount).map { view.elementKind(at: $0)?.protoName ?? "?" }.joined(
                            separator: "+"
                        ))
        }
        let frame = try router.decode(Frame.self, from: record)
        decoded.append(frame)
        text +=
            "#\(n + 1)  \(record.count) B (+\(prefixSize) B prefix)  "
            + (n < written.count && frame == written[n] ? "decoded = written" : "DIFFERS from what was written") + "\n"
        text += "    \(route)\n"
        for line in FrameSummary.lines(frame, indent: "    ") { text += line + "\n" }
        let findings = frame.validate()
        issues += findings.count
        text +=
            findings.isEmpty
            ? "    validate: ok\n" : findings.map { "    validate: " + FlagHints.rewrite("\($0)") + "\n" }.joined()
        text += "\n"
    }

    /// A frame from a newer writer: refused, and decoded only when the reader opts in.
    private mutating func readNewer(_ record: ArraySlice<UInt8>) throws {
        let n = decoded.count
        do {
            decoded.append(try router.decode(Frame.self, from: record))
            text += "#\(n + 1)  \(record.count) B  DECODED, but it needs a newer reader\n\n"
        } catch {
            refused += 1
            let anyway = try Frame(serializedBytes: record, options: DecodingOptions(acceptsNewerFrames: true))
            decoded.append(anyway)
            text += "#\(n + 1)  \(record.count) B  refused as it must be: \(FlagHints.rewrite(error))\n"
            text +=
                "    read anyway (as decode --accept-newer-frames does): "
                + "\(anyway.payload?.kind.protoName ?? "none") from a schema-\(anyway.schemaVersion) writer, "
                + (n < written.count && anyway == written[n] ? "decoded = written" : "DIFFERS from what was written")
                + "\n\n"
        }
    }
}

/// The built-in conversation: Alice, Bob and Carol in a C2C chat and in the group "team-apollo".
enum DemoConversation {
    static let start: Int64 = 1_795_251_600_000  // 2026-11-21 09:00:00 UTC

    static func stamp(_ message: inout Message, minute: Int64, id: String, server: String, seq: UInt64) {
        message.clientMsgID = id
        message.clientTimeMs = start + minute * 60_000
        message.serverTimeMs = start + minute * 60_000 + 120
        message.serverMsgUID = server
        message.seq = seq
        message.random = UInt32(truncatingIfNeeded: seq &* 2_654_435_761)
        message.status = .sent
    }

    // The demo's transcript, in the order its frames are written and numbered as the demo prints
    // them; kept as one function (over 80 lines) so that it reads top to bottom like the conversation.
    static func frames() -> [Frame] {
        // 1. A C2C text that asks for a read receipt.
        var hello = Message.c2cText(from: "alice", to: "bob", "Hi Bob! Are we still on for the launch review at 3?")
        hello.messageFlags.insert(.needReadReceipt)
        hello.offlinePush = OfflinePushInfo.with {
            $0.title = "Alice"; $0.description = "Hi Bob! Are we still on…"
        }
        stamp(&hello, minute: 0, id: "a-0001", server: "144115233-1795251600-1001", seq: 1001)

        // 2. The server's ack for it.
        let ack = Frame(
            .sendAck(
                SendAck.with {
                    $0.clientMsgID = hello.clientMsgID
                    $0.serverMsgUID = hello.serverMsgUID
                    $0.seq = hello.seq
                    $0.serverTimeMs = hello.serverTimeMs
                    $0.conversation = hello.conversation
                }
            )
        )

        // 3. Bob reads it.
        var read = Frame.readReceipt(for: hello.reference, by: "bob", timeMs: start + 90_000)
        if case .receipt(var receipt)? = read.payload {
            receipt.userID = "bob"
            read.payload = .receipt(receipt)
        }

        // 4. A group message that @-mentions Alice and Carol.
        var groupAt = Message.groupText(
            from: "bob",
            group: "team-apollo",
            "@alice @carol the release build is green 🚀",
            atUserIDs: ["alice", "carol"]
        )
        groupAt.messageFlags.insert(.needReadReceipt)
        stamp(&groupAt, minute: 2, id: "b-0042", server: "group-apollo-5001", seq: 5001)

        // 5. Its group read receipt: two members read it, one has not.
        let groupReceipt = Frame(
            .receipt(
                MessageReceipt.with {
                    $0.kind = .read
                    $0.message = groupAt.reference
                    $0.userID = "carol"
                    $0.groupID = "team-apollo"
                    $0.readCount = 2
                    $0.unreadCount = 1
                    $0.timeMs = start + 200_000
                }
            )
        )

        // 6. Carol posts a screenshot: original, large and thumbnail renditions.
        var image = Message.image(
            from: "carol",
            in: .group("team-apollo"),
            format: .png,
            renditions: [
                ImageInfo(
                    type: .original,
                    uuid: "img-7f3a",
                    size: 1_482_331,
                    width: 2880,
                    height: 1800,
                    url: "https://cdn.example.com/img/7f3a/original.png"
                ),
                ImageInfo(
                    type: .large,
                    uuid: "img-7f3a-l",
                    size: 312_540,
                    width: 1152,
                    height: 720,
                    url: "https://cdn.example.com/img/7f3a/large.png"
                ),
                ImageInfo(
                    type: .thumbnail,
                    uuid: "img-7f3a-t",
                    size: 28_113,
                    width: 317,
                    height: 198,
                    url: "https://cdn.example.com/img/7f3a/thumb.png"
                ),
            ]
        )
        stamp(&image, minute: 3, id: "c-0007", server: "group-apollo-5002", seq: 5002)

        // 7. A multi-element chain: text, a sticker, text, a location.
        var chain = Message(
            from: "alice",
            in: .group("team-apollo"),
            elements: [
                .text("Ship it! "), .face(index: 12), .text(" Cake in the usual place:"),
                .location(latitude: 22.5431, longitude: 114.0579, description: "Tencent Binhai Tower, Shenzhen"),
            ]
        )
        chain.quote = groupAt.reference
        stamp(&chain, minute: 4, id: "a-0002", server: "group-apollo-5003", seq: 5003)

        // 8. Alice forwards the thread to Bob as a merger that holds an earlier merger.
        var earlier1 = Message.groupText(from: "carol", group: "team-apollo", "Staging is up, please test")
        stamp(&earlier1, minute: -60, id: "c-0001", server: "group-apollo-4990", seq: 4990)
        var earlier2 = Message.groupText(from: "bob", group: "team-apollo", "Found one bug, fixing")
        stamp(&earlier2, minute: -55, id: "b-0040", server: "group-apollo-4991", seq: 4991)
        var nested = Message.merger(
            from: "alice",
            in: .group("team-apollo"),
            title: "Staging test",
            messages: [earlier1, earlier2]
        )
        stamp(&nested, minute: -50, id: "a-0000", server: "group-apollo-4992", seq: 4992)
        var merger = Message.merger(
            from: "alice",
            in: .oneToOne("bob"),
            title: "Launch thread",
            messages: [nested, groupAt, image]
        )
        stamp(&merger, minute: 5, id: "a-0003", server: "144115233-1795251900-1002", seq: 1002)

        // 9. Carol recalls her screenshot; 10. Bob edits his message.
        let recall = Frame.recall(image.reference, by: "carol", reason: "wrong screenshot", timeMs: start + 290_000)
        var edited = groupAt
        edited.elements = [.text("@alice @carol the release build is green ✅ (tagged v2.4.0)")]
        edited.editVersion = 1
        let edit = Frame(
            .edit(
                EditEvent.with {
                    $0.message = groupAt.reference
                    $0.newMessage = edited
                    $0.editorID = "bob"
                    $0.timeMs = start + 420_000
                }
            )
        )

        // 11. A send the server rejects (80001: the text failed the content filter).
        var rejected = Message.c2cText(from: "bob", to: "alice", "buy cheap followers at …")
        stamp(&rejected, minute: 8, id: "b-0043", server: "", seq: 0)
        rejected.status = .failed
        let reject = Frame(
            .sendAck(
                SendAck.with {
                    $0.clientMsgID = rejected.clientMsgID
                    $0.errorCode = 80001
                    $0.errorDescription = "the message contains sensitive words"
                    $0.conversation = rejected.conversation
                    $0.serverTimeMs = start + 480_100
                }
            )
        )

        return [
            Frame(hello), ack, read, Frame(groupAt), groupReceipt, Frame(image), Frame(chain), Frame(merger),
            recall, edit, Frame(rejected), reject,
        ] + session(groupAt: groupAt, image: image, chain: chain)
    }

    // Long on purpose (over 80 lines): the session-layer frames of the demo, in the order it prints them.
    /// Schema version 2: Bob's phone dropped after message 4 and reconnects; the gap is filled by
    /// seq; then a reaction, a thread reply, a poll and presence changes.
    static func session(groupAt: Message, image: Message, chain: Message) -> [Frame] {
        let team = Conversation.group("team-apollo")
        func request(_ id: UInt64, _ payload: Frame.Payload) -> Frame {
            var frame = Frame(payload)
            frame.requestID = id
            return frame
        }
        // 13. Bob logs in again, resuming from the last seq he holds in the group (5001).
        let login = request(
            1,
            .loginRequest(
                LoginRequest.with {
                    $0.userID = "bob"; $0.token = "bob-token-demo"; $0.deviceID = "bob-iphone"; $0.platform = .ios
                    $0.clientVersion = "2.4.0"; $0.readerVersion = Frame.currentSchemaVersion
                    $0.lastSeen = [
                        ConversationSeq.with {
                            $0.conversation = team; $0.seq = groupAt.seq
                        }
                    ]
                }
            )
        )
        // 14. The server's answer: the group has reached 5003, so 5002 and 5003 are missing.
        let loggedIn = request(
            1,
            .loginResult(
                LoginResult.with {
                    $0.sessionID = "sess-bob-2"; $0.heartbeatIntervalS = 30; $0.serverTimeMs = start + 600_000
                    $0.maxSeqs = [
                        ConversationSeq.with {
                            $0.conversation = team; $0.seq = chain.seq
                        }
                    ]
                }
            )
        )
        // 15–16. Bob pulls the gap; one page holds it all.
        let sync = request(
            2,
            .syncRequest(
                SyncRequest.with {
                    $0.conversation = team; $0.fromSeq = groupAt.seq + 1; $0.limit = 100
                }
            )
        )
        let synced = request(
            2,
            .syncResponse(
                SyncResponse.with {
                    $0.conversation = team; $0.messages = [image, chain]; $0.maxSeq = chain.seq;
                    $0.nextFromSeq = chain.seq + 1
                }
            )
        )
        // 17. Alice, subscribed to Bob's presence, learns that he is online.
        let online = Frame(
            .presence(
                PresenceUpdate.with {
                    $0.userID = "bob"; $0.status = .online; $0.deviceID = "bob-iphone"; $0.platform = .ios
                    $0.timeMs = start + 600_200
                }
            )
        )
        // 18. Carol reacts to Alice's chain.
        let reaction = Frame(
            .reaction(
                ReactionEvent.with {
                    $0.message = chain.reference; $0.userID = "carol"; $0.emoji = "🎉"; $0.action = .add
                    $0.timeMs = start + 610_000
                    $0.summary = [
                        ReactionSummary.with {
                            $0.emoji = "🎉"; $0.count = 1; $0.userIDs = ["carol"]
                        }
                    ]
                }
            )
        )
        // 19. Carol replies in the thread of Bob's announcement.
        var reply = Message.groupText(from: "carol", group: "team-apollo", "Verified on staging too 👍")
        reply.threadRoot = groupAt.reference
        stamp(&reply, minute: 11, id: "c-0008", server: "group-apollo-5004", seq: 5004)
        // 20–22. Alice asks where to celebrate; Bob votes; Alice closes the poll.
        var poll = Message(
            from: "alice",
            in: team,
            elements: [
                MessageElement.with {
                    $0.content = .poll(
                        PollElement.with {
                            $0.pollID = "poll-launch"; $0.question = "Launch dinner?"
                            $0.options = [
                                PollOption.with {
                                    $0.id = 1; $0.text = "Hotpot"
                                },
                                PollOption.with {
                                    $0.id = 2; $0.text = "Dim sum"
                                },
                            ]
                        }
                    )
                }
            ]
        )
        // Its votes so far also live in its extension (keys change after sending: frame 32).
        poll.flags = MessageFlags.supportExtension.rawValue
        poll.expansion = ["rsvp/bob": "yes"]
        stamp(&poll, minute: 12, id: "a-0004", server: "group-apollo-5005", seq: 5005)
        let vote = Frame(
            .pollVote(
                PollVoteEvent.with {
                    $0.pollMessage = poll.reference; $0.pollID = "poll-launch"; $0.voterID = "bob"; $0.optionIDs = [1]
                    $0.timeMs = start + 730_000
                }
            )
        )
        let closed = Frame(
            .pollUpdate(
                PollUpdate.with {
                    $0.pollMessage = poll.reference; $0.pollID = "poll-launch"; $0.closed = true; $0.closedBy = "alice"
                    $0.voterCount = 2; $0.timeMs = start + 790_000
                    $0.results = [
                        PollOptionResult.with {
                            $0.optionID = 1; $0.votes = 2; $0.voterIDs = ["bob", "carol"]
                        },
                        PollOptionResult.with {
                            $0.optionID = 2; $0.votes = 0
                        },
                    ]
                }
            )
        )
        // 23. Bob steps away.
        let away = Frame(
            .presence(
                PresenceUpdate.with {
                    $0.userID = "bob"; $0.status = .away; $0.lastSeenMs = start + 800_000; $0.deviceID = "bob-iphone"
                    $0.platform = .ios; $0.timeMs = start + 860_000
                }
            )
        )
        let content = content()
        return [login, loggedIn, sync, synced, online, reaction, Frame(reply), Frame(poll), vote, closed, away]
            + content + userState(poll: poll, callLog: content.compactMap(\.message).first ?? Message())
    }

    /// Schema version 3: Alice calls Bob (invite, accept, hang up, then the call's log entry), and
    /// Bob answers with an end-to-end encrypted message.
    static func content() -> [Frame] {
        func call(_ signal: CallSignal, by user: String, to peer: String, minute: Int64) -> Frame {
            Frame(
                .call(
                    CallEvent.with {
                        $0.callID = "call-launch"; $0.signal = signal; $0.conversation = .oneToOne(peer)
                        $0.userID = user; $0.media = .video; $0.timeMs = start + minute * 60_000
                        if signal == .invite { $0.inviteeIDs = [peer]; $0.timeoutS = 30 }
                    }
                )
            )
        }
        // 24–26. Alice calls Bob; he answers; she hangs up 7 minutes later.
        let invite = call(.invite, by: "alice", to: "bob", minute: 14)
        let accept = call(.accept, by: "bob", to: "alice", minute: 14)
        let hangUp = call(.hangUp, by: "alice", to: "bob", minute: 21)
        // 27. The call's entry in the conversation.
        var log = Message(
            from: "alice",
            in: .oneToOne("bob"),
            elements: [
                MessageElement.with {
                    $0.content = .callLog(
                        CallLogElement.with {
                            $0.callID = "call-launch"; $0.media = .video; $0.outcome = .completed
                            $0.callerID = "alice"; $0.participantIDs = ["alice", "bob"]
                            $0.startTimeMs = start + 14 * 60_000; $0.durationS = 420
                        }
                    )
                }
            ]
        )
        stamp(&log, minute: 21, id: "a-0006", server: "144115233-1795252500-1003", seq: 1003)
        // 28. Bob's answer, end-to-end encrypted by his phone: the relay sees the envelope (who, to
        // whom, ids, times) and opaque bytes. The demo does no cryptography; its bytes stand in for
        // what a client seals (an AES-GCM test in IMCodecNIOTests seals real content).
        var sealed = Message(
            from: "bob",
            in: .oneToOne("alice"),
            elements: [
                MessageElement.with {
                    $0.content = .encrypted(
                        EncryptedElement.with {
                            $0.algorithm = "AES-256-GCM"; $0.senderDeviceID = "bob-iphone"
                            $0.keyID = Array("session-alice-bob-1".utf8); $0.nonce = Array(repeating: 0x5A, count: 12)
                            $0.ciphertext = (0..<48).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
                            $0.associatedData = Array("1/alice/bob/b-0044".utf8)
                        }
                    )
                }
            ]
        )
        stamp(&sealed, minute: 22, id: "b-0044", server: "144115233-1795252500-1004", seq: 1004)
        return [invite, accept, hangUp, Frame(log), Frame(sealed)]
    }

    // Long on purpose (over 80 lines): the user-state frames of the demo, in the order it prints them.
    /// Schema version 3's user state: Bob's laptop syncs his conversation list, pins the group with a
    /// draft, Carol answers the poll in its extension, Bob blocks a spammer, whose next message the
    /// server refuses (the relay's `--blocked-senders error`; by default it would be dropped silently).
    static func userState(poll: Message, callLog: Message) -> [Frame] {
        let team = Conversation.group("team-apollo")
        func request(_ id: UInt64, _ payload: Frame.Payload) -> Frame {
            var frame = Frame(payload)
            frame.requestID = id
            return frame
        }
        // 29–30. Bob's laptop asks for his whole conversation list; the group has 2 unread messages,
        // one of which @-mentions everyone and him.
        let listRequest = request(7, .conversationListRequest(ConversationListRequest.with { $0.limit = 50 }))
        var received = poll
        received.direction = .received
        var call = callLog
        call.direction = .received
        let list = request(
            7,
            .conversationList(
                ConversationList.with {
                    $0.nextAfterVersion = 212
                    $0.conversations = [
                        ConversationInfo.with {
                            $0.conversation = team; $0.lastMessage = received; $0.maxSeq = 5005; $0.readSeq = 5003
                            $0.unreadCount = 2;
                            $0.atMe = [
                                AtMe.with {
                                    $0.seq = 5004; $0.kind = .atAllAtMe
                                }
                            ]
                            $0.receiveOption = .receive; $0.version = 207; $0.updatedAtMs = start + 12 * 60_000
                            $0.readHorizons = [
                                ReadHorizon.with {
                                    $0.userID = "alice"; $0.readSeq = 5005
                                },
                                ReadHorizon.with {
                                    $0.userID = "carol"; $0.readSeq = 5004
                                },
                            ]
                        },
                        ConversationInfo.with {
                            $0.conversation = .oneToOne("alice"); $0.lastMessage = call; $0.maxSeq = 1004
                            $0.readSeq = 1004; $0.version = 212; $0.updatedAtMs = start + 22 * 60_000
                            $0.readHorizons = [
                                ReadHorizon.with {
                                    $0.userID = "alice"; $0.readSeq = 1003
                                }
                            ]
                        },
                    ]
                }
            )
        )
        // 31. Bob pins the group and leaves a draft there (his phone gets it through his stream).
        let pinned = request(
            8,
            .conversationUpdate(
                ConversationUpdate.with {
                    $0.conversation = team
                    $0.fields = UInt32(ConversationField.pinned.rawValue | ConversationField.draft.rawValue)
                    $0.pinned = true; $0.draftText = "Hotpot it is, I'll book"
                }
            )
        )
        // 32. Carol answers the poll in its extension, from the version she saw; the server's copy
        // says what the keys became.
        let rsvp = Frame(
            .extensionUpdate(
                ExtensionUpdate.with {
                    $0.message = poll.reference
                    $0.set = [
                        ExtensionEntry.with {
                            $0.key = "rsvp/carol"; $0.value = "yes"
                        }
                    ]
                    $0.entries = [
                        ExtensionEntry.with {
                            $0.key = "rsvp/carol"; $0.value = "yes"; $0.version = 1
                        }
                    ]
                    $0.userID = "carol"; $0.timeMs = start + 23 * 60_000
                }
            )
        )
        // 33. Bob blocks a spammer.
        let block = request(
            9,
            .blocklistChange(
                BlocklistChange.with {
                    $0.action = .block; $0.userIDs = ["mallory"]
                }
            )
        )
        // 34–35. The spammer writes again; the server refuses it: Bob blocked him (20007).
        var spam = Message.c2cText(from: "mallory", to: "bob", "Cheap launch tickets!!!")
        spam.clientMsgID = "m-0001"
        spam.clientTimeMs = start + 24 * 60_000
        let refused = Frame(
            .sendAck(
                SendAck.with {
                    $0.clientMsgID = "m-0001"; $0.conversation = .oneToOne("bob"); $0.errorCode = 20007
                    $0.errorDescription = "blocked: the receiver blocked mallory"; $0.serverTimeMs = start + 24 * 60_000
                }
            )
        )
        return [listRequest, list, pinned, rsvp, block, Frame(spam), refused]
    }

    /// The schema version after this reader's: the demo's last frame needs it.
    static let nextVersion = Frame.currentSchemaVersion + 1

    /// A frame from a future writer that this reader must not act on (min_reader_version one above
    /// ``Frame/currentSchemaVersion``).
    static func fromTheFuture() -> Frame {
        var message = Message.c2cText(from: "alice", to: "bob", "This needs a schema-\(nextVersion) reader")
        stamp(&message, minute: 25, id: "a-0007", server: "144115233-1795252500-1005", seq: 1005)
        return Frame.with {
            $0.schemaVersion = nextVersion; $0.minReaderVersion = nextVersion; $0.payload = .message(message)
        }
    }
}
extension Frame {
    /// The message this frame carries, if any.
    fileprivate var message: Message? {
        if case .message(let message)? = payload { message } else { nil }
    }
}
#endif
