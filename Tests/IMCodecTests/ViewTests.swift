// The generated views (`Frame.View`, `Message.View`, ...): every field kind read in place, every
// golden fixture and random frames read through the view equal to the decoded value, views of
// other message types, and the compile-time guarantee that a view cannot leave its scope.
import IMCodec
import IMCodecTestSupport
import Testing

@Suite("Views")
struct ViewTests {
    let decoder = WireDecoder()

    /// A message with every field kind the views read: scalars of each width, enums (one this
    /// schema does not know), strings (with U+0000 and non-ASCII), bytes, repeated strings,
    /// repeated messages, maps, sub-messages, a oneof and unknown fields.
    static var everyKind: Message {
        let message = Message.with {
            $0.clientMsgID = "cli-1"; $0.serverMsgUID = "srv-\u{0}-é"; $0.seq = .max; $0.random = 7
            $0.senderID = "alice"; $0.conversation = .group("team-apollo")
            $0.clientTimeMs = -1; $0.serverTimeMs = .min; $0.priority = .high; $0.status = .unrecognized(99)
            $0.flags = 0b101; $0.targetReceivers = ["bob", "", "carol 🚀"]
            $0.at = AtInfo.with {
                $0.userIDs = ["bob"]; $0.atAll = true
            }
            $0.cloudCustomData = [0, 1, 2, 255]
            $0.customParams = ["k": "v", "": "empty key", "nul": "a\u{0}b"]
            $0.elements = [
                MessageElement.with { $0.content = .text(TextElement.with { $0.text = "hi" }) },
                MessageElement.with {
                    $0.content = .location(
                        LocationElement.with {
                            $0.description = "Shenzhen"; $0.longitude = -0.0; $0.latitude = 22.54
                        }
                    )
                },
                MessageElement.with {
                    $0.content = .face(
                        FaceElement.with {
                            $0.index = .min; $0.data = [9, 8]
                        }
                    )
                },
                MessageElement(),
            ]
        }
        // Field 1023, varint 5: unknown to the schema.
        return (try? Message(serializedBytes: message.serializedBytes() + [0xF8, 0x3F, 0x05])) ?? message
    }

    // One scenario, read top to bottom: kept as one function (over 80 lines).
    @Test func everyFieldKindReadsInPlace() throws {
        let message = Self.everyKind
        let bytes = message.serializedBytes()
        try decoder.withView(Message.self, bytes) { view in
            // Scalars and enums (the unknown number is kept).
            #expect(view.seq == .max)
            #expect(view.random == 7)
            #expect(view.clientTimeMs == -1)
            #expect(view.serverTimeMs == .min)
            #expect(view.priority == .high)
            #expect(view.status == .unrecognized(99))
            #expect(view.flags == 0b101)
            // Strings, as UTF-8 bytes in place.
            #expect(Bool(view.senderID.equals("alice")))
            #expect(view.senderID.count == 5)
            #expect(view.senderID.first == UInt8(ascii: "a"))
            #expect(view.senderID[4] == UInt8(ascii: "e"))
            #expect(view.serverMsgUID.materialize() == "srv-\u{0}-é")
            #expect(view.serverMsgUID.withUnsafeBytes { Array($0) } == Array("srv-\u{0}-é".utf8))
            #expect(Bool(view.senderNickname.isEmpty))
            #expect(view.senderNickname.first == nil)
            // Bytes.
            #expect(view.cloudCustomData.materialize() == [0, 1, 2, 255])
            #expect(view.cloudCustomData.count == 4)
            #expect(view.cloudCustomData[3] == 255)
            // Sub-messages: present and absent.
            guard let conversation = view.conversation else {
                Issue.record("no conversation")
                return
            }
            #expect(conversation.type == .group)
            #expect(Bool(conversation.targetID.equals("team-apollo")))
            if view.quote != nil { Issue.record("a quote that was not set") }
            #expect(view.at?.atAll == true)
            #expect(view.at?.userIDs.count == 1)
            // Repeated strings.
            let receivers = view.targetReceivers
            #expect(receivers.count == 3)
            #expect(Bool(receivers[1].isEmpty))
            #expect(Bool(receivers[2].equals("carol 🚀")))
            #expect(receivers.materialize() == ["bob", "", "carol 🚀"])
            var seen: [String] = []
            receivers.forEach { seen.append($0.materialize()) }
            #expect(seen == message.targetReceivers)
            // Maps: entries in wire order (canonical: sorted by key), lookups by key.
            let params = view.customParams
            #expect(params.count == 3)
            #expect(params.value(forKey: "nul")?.materialize() == "a\u{0}b")
            #expect(params.value(forKey: "")?.equals("empty key") == true)
            if params.value(forKey: "missing") != nil { Issue.record("a key that is not there") }
            #expect(params.materialize() == message.customParams)
            #expect(params.indices.map { params.key(at: $0).materialize() } == ["", "k", "nul"])
            #expect(Bool(view.expansion.isEmpty))
            // Repeated messages and oneofs, as enums of views.
            let elements = view.elements
            #expect(elements.count == 4)
            #expect(elements.first?.contentKind == .text)
            if elements.last?.content != nil { Issue.record("the last element has content") }
            guard case .text(let text)? = elements[0].content else {
                Issue.record("element 0 is not text")
                return
            }
            #expect(Bool(text.text.equals("hi")))
            guard case .location(let location)? = elements[1].content else {
                Issue.record("element 1 is not a location")
                return
            }
            #expect(location.longitude.bitPattern == (-0.0 as Double).bitPattern)
            #expect(location.latitude == 22.54)
            #expect(Bool(location.description.equals("Shenzhen")))
            guard case .face(let face)? = elements[2].content else {
                Issue.record("element 2 is not a face")
                return
            }
            #expect(face.index == .min)
            #expect(face.data.materialize() == [9, 8])
            var kinds: [MessageElement.Content.Kind?] = []
            elements.forEach { kinds.append($0.contentKind) }
            #expect(kinds == [.text, .location, .face, nil])
            // Unknown fields.
            #expect(Bool(view.hasUnknownFields))
            #expect(view.unknownFields == message.unknownFields)
            #expect(view.conversation?.hasUnknownFields == false)
            // The value, from the view.
            #expect(view.materialize() == message)
            #expect(Message(view) == message)
        }
    }

    @Test func readmeExample() throws {
        // README's Usage: the first text element of a message frame, read in place.
        let bytes = Frame(Message.groupText(from: "alice", group: "team-apollo", "@bob ship it", atUserIDs: ["bob"]))
            .serializedBytes()
        let firstText = try decoder.withView(Frame.self, bytes) { frame -> String? in
            guard case .message(let message)? = frame.payload, let first = message.elements.first,
                case .text(let text)? = first.content
            else { return nil }
            return text.text.materialize()
        }
        #expect(firstText == "@bob ship it")
    }

    @Test func repeatedNumbersReadInPlace() throws {
        let vote = PollVoteEvent.with {
            $0.pollID = "p"; $0.voterID = "bob"; $0.optionIDs = [3, 0, .max]; $0.timeMs = 5
        }
        try decoder.withView(PollVoteEvent.self, vote.serializedBytes()) { view in
            #expect(view.optionIDs.count == 3)
            #expect(view.optionIDs[2] == .max)
            #expect(view.optionIDs.materialize() == [3, 0, .max])
            #expect(view.materialize() == vote)
        }
    }

    @Test func aRepeatedMapKeyKeepsItsLastValue() throws {
        // Two entries with key "k" (as a + b concatenation gives): the last one wins, as protobuf parses.
        let first = SystemNotice.with { $0.params = ["k": "old"] }.serializedBytes()
        let second = SystemNotice.with { $0.params = ["k": "new"] }.serializedBytes()
        try decoder.withView(SystemNotice.self, first + second) { view in
            #expect(view.params.count == 2)
            #expect(view.params.value(forKey: "k")?.materialize() == "new")
            #expect(view.params.materialize() == ["k": "new"])
        }
    }

    @Test("every valid fixture reads through its view as it decodes", arguments: FixtureFiles.validNames)
    func fixtureThroughView(_ name: String) throws {
        let bytes = try FixtureFiles.bytes(FixtureFiles.valid.appendingPathComponent(name + ".binpb"))
        let frame = try Frame(serializedBytes: bytes)
        let (viewed, kind) = try decoder.withView(Frame.self, bytes) { ($0.materialize(), $0.payloadKind) }
        // Compared by canonical bytes: a NaN (location_extremes) is not equal to itself.
        #expect(viewed.serializedBytes() == frame.serializedBytes())
        #expect(kind == frame.payload?.kind)
        // withFrameView lends the same view type.
        #expect(try decoder.withFrameView(bytes) { $0.materialize() }.serializedBytes() == frame.serializedBytes())
    }

    @Test func randomFramesReadThroughTheirViews() throws {
        var random = RandomFrames(seed: 20_261_123)
        for _ in 0..<300 {
            let frame = random.frame()
            let bytes = frame.serializedBytes()
            let viewed = try decoder.withView(Frame.self, bytes) { view in
                // Reading the payload through the enum of views gives the kind it claims.
                #expect(view.payload?.kind == view.payloadKind)
                return view.materialize()
            }
            #expect(viewed.serializedBytes() == bytes)
        }
    }

    @Test func everyMessageTypeHasAView() throws {
        // One entry point per type; each reads its own (here: empty and default) message.
        #expect(try decoder.withView(Conversation.self, [UInt8]()) { $0.type } == .unspecified)
        #expect(
            try decoder.withView(LoginRequest.self, LoginRequest.with { $0.userID = "u" }.serializedBytes()) {
                $0.userID.materialize()
            } == "u"
        )
        #expect(
            try decoder.withView(SyncResponse.self, SyncResponse.with { $0.hasMore = true }.serializedBytes()) {
                $0.hasMore
            }
        )
    }

    /// `Message.View.serverAssignedFields` names each server-assigned field a message sets, and only those.
    @Test func serverAssignedFieldsNameWhatOnlyAServerSets() throws {
        let setters: [String: (inout Message) -> Void] = [
            "server_msg_uid": { $0.serverMsgUID = "s-1" }, "seq": { $0.seq = 1 },
            "server_time_ms": { $0.serverTimeMs = -1 }, "edit_version": { $0.editVersion = 2 },
            "received_status": { $0.receivedStatus = 1 }, "delivered_ids": { $0.deliveredIDs = ["bob"] },
            "read_ids": { $0.readIDs = [""] }, "updated_at_ms": { $0.updatedAtMs = 5 },
            "reactions": { $0.reactions = [ReactionSummary()] }, "thread": { $0.thread = ThreadSummary() },
            "expire_at_ms": { $0.expireAtMs = 9 }, "is_offline": { $0.isOffline = true },
        ]
        #expect(Set(setters.keys) == Set(Message.serverAssignedFieldNames))
        // What a sender sets, direction and a disappearing timer included, is none of them.
        var sent = Message.c2cText(from: "alice", to: "bob", "hi", clientMsgID: "c-1")
        sent.direction = .sent
        sent.expireAfterS = 60
        sent.status = .sending
        #expect(try decoder.withView(Message.self, sent.serializedBytes()) { $0.serverAssignedFields }.isEmpty)
        for name in Message.serverAssignedFieldNames {
            var message = sent
            setters[name]!(&message)
            #expect(try decoder.withView(Message.self, message.serializedBytes()) { $0.serverAssignedFields } == [name])
        }
        var all = sent
        for name in Message.serverAssignedFieldNames { setters[name]!(&all) }
        #expect(
            try decoder.withView(Message.self, all.serializedBytes()) { $0.serverAssignedFields }
                == Message.serverAssignedFieldNames
        )
    }

    @Test func viewsKeepTheDecodersLimitsAndErrors() {
        let strict = WireDecoder(options: DecodingOptions(maxInputSize: 4))
        #expect(throws: IMCodecError.self) {
            try strict.withView(Message.self, Self.everyKind.serializedBytes()) { _ in }
        }
        // Invalid UTF-8 in a string field: refused before any view exists.
        #expect(throws: IMCodecError.self) {
            try decoder.withView(Conversation.self, [0x12, 0x01, 0xFF]) { _ in }
        }
    }

    @Test func deepMessagesMaterializeFromTheirViews() throws {
        let frame = nestedMergerFrame(layers: 100)
        let bytes = frame.serializedBytes()
        let viewed = try decoder.withView(Frame.self, bytes) { $0.materialize() }
        #expect(viewed == frame)
    }

    // A view cannot leave the call that lends it: it is ~Escapable, and so is everything it hands
    // out. Each of these, uncommented, fails to compile (Swift 6.3.1, checked when this was written):
    //
    //     let leaked: Message.View = try decoder.withView(Message.self, bytes) { $0 }
    //     // error: instance method 'withView' requires that 'Message.View' conform to 'Escapable'
    //
    //     let element: MessageElement.View? = try decoder.withView(Message.self, bytes) { $0.elements.first }
    //     // error: referencing instance method 'withView' on 'Optional' requires that
    //     // 'MessageElement.View' conform to 'Escapable'
    //
    //     var kept: StringView?
    //     try decoder.withView(Message.self, bytes) { kept = $0.senderID }
    //     // error: lifetime-dependent variable 'kept' escapes its scope
    //
    // (Without the annotation, `{ $0 }` makes the closure return `()`: the view is dropped, not
    // returned.)
    // What may leave is a value: `materialize()`, or any number, enum or `String` read from it.
}
