#if Tools
import Foundation
import IMCodec
import IMCodecNIO
import NIOCore
import NIOPosix
import Testing

@testable import imcodec_relay

/// View-once messages (message.proto `view_once`: "receivers show the media once, then delete it
/// and keep no copy").
@Suite("Relay: view-once messages", .timeLimit(.minutes(2)))
struct RelayViewOnceTests {
    /// A view-once photo with a caption and custom data.
    static let photo: Message = {
        var message = Message(
            from: "alice",
            in: .oneToOne("bob"),
            elements: [
                .image(
                    format: .jpg,
                    [
                        ImageInfo.with {
                            $0.type = .original; $0.url = "https://cdn.example/secret.jpg"; $0.size = 1024
                        }
                    ]
                )
            ],
            clientMsgID: "v-1"
        )
        message.viewOnce = true
        message.cloudCustomData = [1, 2, 3]
        message.customParams = ["caption": "meet me at 9"]
        message.extra = "meet me at 9"
        message.offlinePush = OfflinePushInfo.with {
            $0.title = "alice"; $0.description = "meet me at 9"
        }
        return message
    }()

    /// What a view-once message holds: its photo's URL, or "no content" for the stub a receiver
    /// reads again (an empty image, no custom data, parameters, extra or push text).
    static func content(_ message: Message?) -> String {
        guard let message else { return "no message" }
        guard message.viewOnce else { return "not view-once" }
        guard case .image(let image)? = message.elements.first?.content, message.elements.count == 1 else {
            return "not one image"
        }
        if image == ImageElement(), message.cloudCustomData.isEmpty, message.customParams.isEmpty,
            message.extra.isEmpty, message.offlinePush == nil
        {
            return "no content"
        }
        return image.images.first?.url ?? "content"
    }

    /// The view-once message a device reads from its stream (from the start).
    static func streamed(_ client: TestClient, id: UInt64) async throws -> String {
        let page = try await client.streamPage(requestID: id) ?? []
        let message = page.compactMap { if case .message(let m)? = $0.payload, m.viewOnce { m } else { nil } }.first
        return content(message)
    }

    /// Before, a receiver read a view-once message's content again whenever it asked: history, sync
    /// by seq, its conversation list, a stream sync from the start. Now each receiving device gets
    /// the content once, through its stream (live or by sync, until it acknowledges a position past
    /// it, across a restart); every other read serves the message without its content. Its sender
    /// reads it whole. A device that first logs in after the message was kept gets it without its
    /// content too (before, a new device id read it once more).
    @Test(arguments: StoreBackend.allCases)
    func aReceiverGetsAViewOnceMessageOncePerDevice(_ backend: StoreBackend) async throws {
        let database = try await TestStore(backend)
        defer { database.remove() }
        let configure: (inout RelayConfiguration) -> Void = { $0.store = database.location }
        try await withClientGroup { group in
            var edit = Frame()
            try await withRelay(configure) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a")
                let phone = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "phone")
                // Bob's laptop was there before the message, and is offline when it comes.
                let laptop = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "laptop")
                await laptop.close()
                try await alice.send(Frame(Message.c2cText(from: "alice", to: "bob", "plain", clientMsgID: "v-0")))
                try await alice.send(Frame(Self.photo))
                // Live: the content, once.
                #expect(await eventually { phone.collector.messages.count == 2 })
                #expect(Self.content(phone.collector.messages.last) == "https://cdn.example/secret.jpg")
                // Not yet acknowledged: a stream sync still has it (a device that missed the live copy).
                #expect(try await Self.streamed(phone, id: 1) == "https://cdn.example/secret.jpg")
                let position = try #require(
                    phone.collector.frames.first { $0.messagePayload?.viewOnce == true }?.streamPosition
                )
                let ack = RelayProtocol.answer(.streamAck(StreamAck.with { $0.position = position }), requestID: 2)
                #expect(try await phone.ask(ack)?.requestResult?.errorCode == 0)
                #expect(try await Self.streamed(phone, id: 3) == "no content")

                // History, sync by seq and the conversation list serve it without its content.
                let list = try await RelayUserStateTests.list(phone, id: 8)
                #expect(Self.content(RelayUserStateTests.entry(list, .oneToOne("alice"))?.lastMessage) == "no content")
                let history = try await RelayHistoryTests.page(phone, id: 4) { $0.conversation = .oneToOne("alice") }
                let kept = history?.messages.first { $0.seq == 2 }
                #expect(Self.content(kept) == "no content")
                #expect(kept?.serverMsgUID == alice.collector.acks.last?.serverMsgUID && kept?.senderID == "alice")
                #expect(history?.messages.first { $0.seq == 1 }?.firstText == "plain")
                let sync = try await phone.ask(RelayProtocol.syncFrame(.oneToOne("alice"), from: 1, requestID: 5))
                guard case .syncResponse(let synced)? = sync?.payload else {
                    Issue.record("no sync response")
                    return
                }
                #expect(Self.content(synced.messages.last) == "no content")
                // Filtered reads serve the same stub.
                let found = try await RelayHistoryTests.page(phone, id: 6) {
                    $0.conversation = .oneToOne("alice"); $0.senderIDs = ["alice"]; $0.startTimeMs = 1
                }
                #expect(Self.content(found?.messages.first { $0.seq == 2 }) == "no content")

                // Nothing shows its content again: its sender may not edit it (3003).
                edit = RelayProtocol.answer(
                    .edit(
                        EditEvent.with {
                            $0.message = kept?.reference ?? MessageRef()
                            $0.editorID = "alice"
                            $0.newMessage = Self.photo
                        }
                    ),
                    requestID: 10
                )
                #expect(try await alice.ask(edit)?.requestResult?.errorCode == RelayProtocol.RequestError.badRequest)

                // Its sender reads it whole.
                let own = try await RelayHistoryTests.page(alice, id: 7) { $0.conversation = .oneToOne("bob") }
                #expect(Self.content(own?.messages.first { $0.seq == 2 }) == "https://cdn.example/secret.jpg")
                let ownList = try await RelayUserStateTests.list(alice, id: 9)
                #expect(
                    Self.content(RelayUserStateTests.entry(ownList, .oneToOne("bob"))?.lastMessage)
                        == "https://cdn.example/secret.jpg"
                )
                for client in [alice, phone] { await client.close() }
            }

            try await withRelay(configure) { server in
                // After a restart the phone's acknowledgement stands; the laptop, offline when it
                // came, gets the content once from its stream, until it acknowledges it.
                let phone = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "phone")
                #expect(try await Self.streamed(phone, id: 10) == "no content")
                let laptop = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "laptop")
                let page = try #require(try await laptop.streamPage(requestID: 11))
                #expect(
                    Self.content(page.compactMap(\.messagePayload).first { $0.viewOnce })
                        == "https://cdn.example/secret.jpg"
                )
                let position = try #require(page.first { $0.messagePayload?.viewOnce == true }?.streamPosition)
                let ack = RelayProtocol.answer(.streamAck(StreamAck.with { $0.position = position }), requestID: 12)
                #expect(try await laptop.ask(ack)?.requestResult?.errorCode == 0)
                #expect(try await Self.streamed(laptop, id: 13) == "no content")
                // A device id the relay first sees now was not there when it was sent: no content.
                let tablet = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "tablet")
                #expect(try await Self.streamed(tablet, id: 14) == "no content")
                // The relay still knows it is view-once.
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a")
                #expect(try await alice.ask(edit)?.requestResult?.errorCode == RelayProtocol.RequestError.badRequest)
                await alice.close()
                for client in [phone, laptop, tablet] { await client.close() }
            }
        }
    }

    /// A view-once message takes no extension keys (its `expansion` goes out once, with the rest
    /// of it): a fetch serves none, an update is refused as for a message sent without
    /// MESSAGE_FLAG_SUPPORT_EXTENSION (3008). Before, every fetch served its keys again.
    @Test func aViewOnceMessageTakesNoExtensionKeys() async throws {
        try await withClientGroup { group in
            try await withRelay { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                for (index, viewOnce) in [false, true].enumerated() {
                    var message = Self.photo
                    message.clientMsgID = "x-\(index)"
                    message.viewOnce = viewOnce
                    message.messageFlags.insert(.supportExtension)
                    message.expansion = ["caption": "the beach"]
                    try await alice.send(Frame(message))
                }
                #expect(await eventually { bob.collector.messages.count == 2 })
                let references = bob.collector.messages.map(\.reference)
                let fetched = try await RelayUserStateTests.ask(
                    bob,
                    .extensionFetchRequest(.with { $0.messages = references }),
                    id: 1
                )
                guard case .extensionFetchResponse(let response)? = fetched?.payload else {
                    Issue.record("no extension fetch answer")
                    return
                }
                #expect(response.extensions.map { $0.message?.clientMsgID } == ["x-0"])
                for (index, (reference, code)) in zip(references, [0, Router.ExtensionError.notExtensible]).enumerated()
                {
                    let update = ExtensionUpdate.with {
                        $0.message = reference
                        $0.set = [
                            .with {
                                $0.key = "seen"; $0.value = "1"
                            }
                        ]
                    }
                    let answer = try await RelayUserStateTests.ask(bob, .extensionUpdate(update), id: 2 + UInt64(index))
                    #expect(answer?.requestResult?.errorCode == code, "\(reference.clientMsgID)")
                }
                for client in [alice, bob] { await client.close() }
            }
        }
    }
}
#endif
