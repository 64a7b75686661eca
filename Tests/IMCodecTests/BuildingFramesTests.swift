// swift-format-ignore-file
// (Every Swift block of the docs this test runs must appear in this file verbatim.)
// The BuildingFrames article (Sources/IMCodec/IMCodec.docc/BuildingFrames.md): every code block
// in it appears here verbatim, compiles and runs, and every frame it builds validates and
// round-trips. The last test fails when the article and this file drift apart.
import Foundation
import IMCodec
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite("BuildingFrames article")
struct BuildingFramesTests {
    // The article's blocks build on one another (the events name the messages built above them), so
    // they run in one function, over 80 lines: the article's own length.
    @Test("every element kind and every event: each frame validates, round-trips and survives a file")
    func everyExample() throws {
        let mention = Message.groupText(from: "alice", group: "team-apollo", "@bob review please",
                                        atUserIDs: ["bob"])

        let photo = MessageElement.image(format: .jpg, [
            ImageInfo(type: .original, uuid: "img-1", size: 482_113, width: 3024, height: 4032,
                      url: "https://cdn.example.com/img-1"),
            ImageInfo(type: .thumbnail, uuid: "img-1-t", size: 9_021, width: 198, height: 264,
                      url: "https://cdn.example.com/img-1-t"),
        ])
        let report = MessageElement.file(uuid: "file-7", name: "Q3.pdf", size: 1_048_576,
                                         url: "https://cdn.example.com/file-7")

        let voice = MessageElement.sound(uuid: "snd-3", size: 24_576, durationS: 6,
                                         url: "https://cdn.example.com/snd-3")
        let clip = MessageElement.video(
            (uuid: "vid-9", type: "mp4", size: 5_242_880, url: "https://cdn.example.com/vid-9"),
            durationS: 31,
            snapshot: (uuid: "vid-9-s", type: "jpg", size: 40_960, width: 720, height: 1280,
                       url: "https://cdn.example.com/vid-9-s"))

        let place = MessageElement.location(latitude: 22.5431, longitude: 114.0579, description: "Shenzhen Bay")
        let sticker = MessageElement.face(index: 12)
        let card = MessageElement.custom(Array(#"{"kind":"order","id":42}"#.utf8), description: "Order #42")
        let lunch = MessageElement.poll(id: "poll-1", question: "Lunch?", options: ["Noodles", "Dumplings"])

        let packed = MessageElement.with {
            $0.content = .sticker(StickerElement.with {
                $0.packID = "cats-1"; $0.stickerID = "7"; $0.emoji = "😸"; $0.mimeType = "image/webp"
            })
        }
        let contact = MessageElement.with {
            $0.content = .contactCard(ContactCardElement.with {
                $0.userID = "carol"; $0.displayName = "Carol"; $0.phoneNumbers = ["+86 138 0013 8000"]
            })
        }
        let missed = MessageElement.with {
            $0.content = .callLog(CallLogElement.with {
                $0.callID = "call-1"; $0.media = .video; $0.outcome = .missed; $0.callerID = "alice"
            })
        }
        let choices = MessageElement.with {
            $0.content = .buttons(ButtonsElement.with {
                $0.rows = [ButtonRow.with {
                    $0.buttons = [Button.with { $0.id = "ship"; $0.label = "Ship it"; $0.action = .callback; $0.data = [1] }]
                }]
            })
        }
        let answer = MessageElement.with {
            $0.content = .stream(StreamElement.with { $0.streamID = "s-1"; $0.text = "The answer" })
        }
        let sealedBytes: [UInt8] = Array(repeating: 0xA5, count: 48)  // what the client's cipher made
        let sealed = MessageElement.with {
            $0.content = .encrypted(EncryptedElement.with {
                $0.algorithm = "AES-256-GCM"; $0.senderDeviceID = "alice-phone"; $0.ciphertext = sealedBytes
            })
        }

        let chain = Message(from: "alice", in: .group("team-apollo"),
                            elements: [.text("Where we met: "), place, sticker])
        let frame = Frame(chain)

        let joined = MessageElement.with {
            $0.content = .groupTips(GroupTipsElement.with {
                $0.type = .join
                $0.groupID = "team-apollo"
                $0.operatorID = "alice"
                $0.memberIDs = ["carol"]
                $0.memberCount = 12
            })
        }

        let forward = Message.merger(from: "alice", in: .oneToOne("dave"), title: "Launch thread",
                                     messages: [mention, chain])

        let sent = Message.c2cText(from: "alice", to: "bob", "Hi Bob!")
        let ref = sent.reference

        let read = Frame.readReceipt(for: ref, by: "bob")
        let delivered = Frame(.receipt(MessageReceipt.with {
            $0.kind = .delivered; $0.message = ref; $0.userID = "bob"; $0.deviceID = "bob-phone"
        }))
        let c2cRead = Frame(.c2cReadReceipt(C2CReadReceipt(userID: "bob", tencentTimestamp: 1_700_000_000)))
        let recall = Frame.recall(ref, by: "alice", reason: "typo")

        let groupMessage = mention.reference
        let askReceipts = Frame(.readReceiptRequest(ReadReceiptRequest.with { $0.messages = [groupMessage] }))
        let askReaders = Frame(.groupReadMembersRequest(GroupReadMembersRequest.with {
            $0.message = groupMessage; $0.filter = .read; $0.count = 50
        }))
        let counts = Frame(.receipts(ReceiptBatch.with {
            $0.receipts = [MessageReceipt.with {
                $0.kind = .read; $0.message = groupMessage; $0.groupID = "team-apollo"
                $0.readCount = 3; $0.unreadCount = 9
            }]
        }))
        let readers = Frame(.groupReadMembers(GroupReadMembers.with {
            $0.message = groupMessage; $0.read = true; $0.memberIDs = ["bob", "carol", "dave"]; $0.finished = true
        }))

        var edited = sent  // the same message (same clientMsgID), a later version
        edited.elements = [.text("Hi Bob, welcome!")]
        edited.editVersion += 1
        let edit = Frame(.edit(EditEvent.with {
            $0.message = ref; $0.newMessage = edited; $0.editorID = "alice"
        }))
        let delete = Frame(.delete(DeleteEvent.with {
            $0.messages = [ref]; $0.scope = .everyone; $0.operatorID = "alice"
        }))
        let typing = Frame(.typing(TypingEvent.with {
            $0.conversation = .oneToOne("bob"); $0.userID = "alice"; $0.state = .started
        }))
        let markRead = Frame(.markRead(MarkReadEvent.with {
            $0.conversation = .group("team-apollo"); $0.userID = "bob"; $0.readSeq = 4_096
        }))

        let reaction = Frame(.reaction(ReactionEvent.with {
            $0.message = ref; $0.userID = "bob"; $0.emoji = "👍"; $0.action = .add
        }))
        let pin = Frame(.pin(PinEvent.with {
            $0.conversation = .oneToOne("bob"); $0.message = ref; $0.pinned = true; $0.operatorID = "bob"
        }))
        let vote = Frame(.pollVote(PollVoteEvent.with {
            $0.pollMessage = ref; $0.pollID = "poll-1"; $0.voterID = "bob"; $0.optionIDs = [2]
        }))
        let closed = Frame(.pollUpdate(PollUpdate.with {
            $0.pollMessage = ref; $0.pollID = "poll-1"; $0.closed = true; $0.closedBy = "alice"
            $0.results = [PollOptionResult.with { $0.optionID = 2; $0.votes = 1 }]; $0.voterCount = 1
        }))
        let timer = Frame(.disappearingTimer(DisappearingTimerEvent.with {
            $0.conversation = .oneToOne("bob"); $0.expireAfterS = 86_400; $0.operatorID = "alice"
        }))
        let mute = Frame(.receiveOption(ReceiveOptionChange.with {
            $0.conversation = .group("team-apollo"); $0.option = .receiveNotNotify; $0.userID = "bob"
        }))

        let ring = Frame(.call(CallEvent.with {
            $0.callID = "call-1"; $0.signal = .invite; $0.conversation = .oneToOne("bob"); $0.userID = "alice"
            $0.inviteeIDs = ["bob"]; $0.media = .video; $0.timeoutS = 30
        }))
        let more = Frame(.streamChunk(StreamChunk.with {
            $0.message = ref; $0.streamID = "s-1"; $0.position = 0; $0.text = " is 42."; $0.final = true
        }))

        let notice = Frame(.systemNotice(SystemNotice.with {
            $0.type = "maintenance"; $0.params = ["window": "02:00-03:00 UTC"]
            $0.text = "Planned maintenance tonight"
        }))
        let history = Frame(.historyRequest(HistoryRequest.with {
            $0.conversation = .group("team-apollo"); $0.count = 20; $0.direction = .older
        }))

        let lists = Frame(.conversationListRequest(ConversationListRequest.with {
            $0.afterVersion = 207; $0.limit = 50
        }))
        let pinDraft = Frame(.conversationUpdate(ConversationUpdate.with {
            $0.conversation = .group("team-apollo")
            $0.fields = UInt32(ConversationField.pinned.rawValue | ConversationField.draft.rawValue)
            $0.pinned = true; $0.draftText = "Hotpot it is"
        }))
        let rsvp = Frame(.extensionUpdate(ExtensionUpdate.with {
            $0.message = ref; $0.set = [ExtensionEntry.with { $0.key = "rsvp/bob"; $0.value = "yes"; $0.version = 0 }]
        }))
        let keys = Frame(.extensionFetchRequest(ExtensionFetchRequest.with { $0.messages = [ref] }))
        let block = Frame(.blocklistChange(BlocklistChange.with { $0.action = .block; $0.userIDs = ["mallory"] }))
        let search = Frame(.historyRequest(HistoryRequest.with {
            $0.conversation = .oneToOne("bob"); $0.count = 50; $0.senderIDs = ["bob"]; $0.textContains = "invoice"
            $0.markAsRead = true
        }))

        let elementFrames = [mention, chain, forward].map(Frame.init)
            + [photo, report, voice, clip, place, sticker, card, lunch, packed, contact, missed, choices, answer, sealed].map {
                Frame(Message(from: "alice", in: .group("team-apollo"), elements: [$0]))
            }
        let elementKinds = Set(([chain, forward, mention].flatMap(\.elements)
            + [photo, report, voice, clip, card, lunch, joined, packed, contact, missed, choices, answer, sealed])
            .compactMap { $0.content?.kind })
        #expect(elementKinds == Set(MessageElement.Content.Kind.allCases), "an element kind has no example")

        let eventFrames = [
            read, delivered, c2cRead, recall, askReceipts, askReaders, counts, readers, edit, delete, typing,
            markRead, reaction, pin, vote, closed, timer, mute, notice, history, ring, more, lists, pinDraft, rsvp,
            keys, block, search,
        ]
        // Every payload of events.proto and receipts.proto that a client sends about messages, and
        // the user-state requests of session.proto (the rest of the session layer has its own
        // article).
        let events: Set<Frame.Payload.Kind> = [
            .receipt, .receipts, .c2cReadReceipt, .groupReadMembers, .readReceiptRequest,
            .groupReadMembersRequest, .recall, .edit, .delete, .typing, .markRead, .systemNotice,
            .historyRequest, .reaction, .pin, .pollVote, .pollUpdate, .disappearingTimer, .receiveOption,
            .call, .streamChunk, .conversationListRequest, .conversationUpdate, .extensionUpdate,
            .extensionFetchRequest, .blocklistChange,
        ]
        #expect(Set(eventFrames.compactMap { $0.payload?.kind }) == events, "an event has no example")

        for candidate in elementFrames + [frame] + eventFrames {
            #expect(candidate.validate().isEmpty, "\(candidate.payload?.kind as Any): \(candidate.validate())")
            #expect(try Frame(serializedBytes: candidate.serializedBytes()) == candidate)
        }
        // Group tips come from the server, in a group conversation.
        let tips = Frame(Message(from: "administrator", in: .group("team-apollo"), elements: [joined]))
        #expect(try Frame(serializedBytes: tips.serializedBytes()) == tips)

        let file = FileManager.default.temporaryDirectory.appendingPathComponent("frames.bin")
        var bytes: [UInt8] = []
        for frame in [Frame(sent), read, reaction] {
            Delimited.append(frame, to: &bytes)
        }
        try Data(bytes).write(to: file)

        let stored = try [UInt8](Data(contentsOf: file))
        var reader = Delimited.Reader<Frame>(stored)
        var frames: [Frame] = []
        while let frame = try reader.next() {
            frames.append(frame)
        }

        #expect(frames == [Frame(sent), read, reaction])
        try? FileManager.default.removeItem(at: file)
    }

    @Test("the socket examples: frames written in one piece arrive whole, however the reads split them")
    func socketExamples() throws {
        var fds: [Int32] = [0, 0]
        #if canImport(Glibc)
        let streamType = Int32(SOCK_STREAM.rawValue)
        #else
        let streamType = SOCK_STREAM
        #endif
        #expect(socketpair(AF_UNIX, streamType, 0, &fds) == 0)
        defer { close(fds[0]) }
        // More bytes than one read takes (4,096) and than a socket buffer holds are written
        // from another thread, so records cross read boundaries.
        let sentFrames = (0..<300).map { index in
            Frame(Message.c2cText(from: "alice", to: "bob", String(repeating: "x", count: index * 7)))
        }
        let writer = Thread { [fd = fds[1]] in
            for frame in sentFrames { send(frame, to: fd) }
            close(fd)
        }
        writer.start()
        var received: [Frame] = []
        try readFrames(from: fds[0]) { received.append($0) }
        #expect(received == sentFrames)
    }

    @Test("every Swift block of the article appears verbatim in this file")
    func articleMatchesThisFile() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let article = try String(
            contentsOf: root.appendingPathComponent("Sources/IMCodec/IMCodec.docc/BuildingFrames.md"), encoding: .utf8)
        let tests = try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
        let testLines = tests.split(separator: "\n", omittingEmptySubsequences: false).map(trimmed)
        let blocks = article.components(separatedBy: "```swift\n").dropFirst().map {
            $0.components(separatedBy: "```")[0].split(separator: "\n", omittingEmptySubsequences: false)
                .dropLast().map(trimmed)
        }
        #expect(blocks.count >= 10)
        for block in blocks {
            let found = testLines.indices.contains { start in
                testLines[start...].starts(with: block)
            }
            #expect(found, "not in BuildingFramesTests.swift:\n\(block.joined(separator: "\n"))")
        }
    }

    private func trimmed(_ line: Substring) -> String {
        String(line.drop { $0 == " " })
    }
}

// The article's socket examples, at file scope as in an app.
/// Reads frames from a connected stream socket until the peer closes it.
func readFrames(from socket: Int32, _ handle: (Frame) throws -> Void) throws {
    var pending: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        while let next = try pending.withUnsafeBytes({ buffer in
                  try Delimited.readLengthPrefix(buffer, maxLength: DecodingOptions().maxInputSize)
              }), pending.count >= next.prefixSize + next.length {
            let end = next.prefixSize + next.length
            try handle(Frame(serializedBytes: pending[next.prefixSize..<end]))
            pending.removeFirst(end)
        }
        let count = chunk.withUnsafeMutableBytes { read(socket, $0.baseAddress, $0.count) }
        guard count > 0 else { return }  // 0: the peer closed the stream; -1: an error
        pending.append(contentsOf: chunk[..<count])
    }
}

func send(_ frame: Frame, to socket: Int32) {
    var record: [UInt8] = []
    Delimited.append(frame, to: &record)
    var sent = 0
    while sent < record.count {
        let count = record[sent...].withUnsafeBytes { write(socket, $0.baseAddress, $0.count) }
        guard count > 0 else { return }
        sent += count
    }
}

