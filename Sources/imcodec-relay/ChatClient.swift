#if Tools
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import IMCodec
import IMCodecNIO
import NIOCore
import NIOPosix

/// One line typed into the chat client.
enum ChatCommand: Sendable, Equatable {
    /// `@peer text`: a one-to-one text message.
    case sendDirect(to: String, text: String)
    /// `#group text`: a group text message.
    case sendGroup(group: String, text: String)
    /// `/join group`.
    case join(String)
    /// `/leave group`.
    case leave(String)
    /// `/recall`: recall the last message this client sent.
    case recall
    /// `/edit text`: replace the text of the last message this client sent.
    case edit(String)
    /// `/react emoji`: react to the last message this client received.
    case react(String)
    /// `/quit`.
    case quit
    /// `/help`, or a line that is none of the above.
    case help

    /// Parses a line; a bare line goes to `defaultTarget` (`peer` or `#group`) when there is one.
    static func parse(_ line: String, defaultTarget: String?) -> ChatCommand? {
        let trimmed = line.trimmingSpaces()
        if trimmed.isEmpty { return nil }
        func split(_ s: Substring) -> (String, String) {
            let head = s.prefix { $0 != " " }
            return (String(head), String(s.dropFirst(head.count)).trimmingSpaces())
        }
        if trimmed.hasPrefix("@") {
            let (peer, text) = split(trimmed.dropFirst())
            return peer.isEmpty || text.isEmpty ? .help : .sendDirect(to: peer, text: text)
        }
        if trimmed.hasPrefix("#") {
            let (group, text) = split(trimmed.dropFirst())
            return group.isEmpty || text.isEmpty ? .help : .sendGroup(group: group, text: text)
        }
        if trimmed.hasPrefix("/") {
            let (verb, rest) = split(trimmed.dropFirst())
            switch verb {
            case "join" where !rest.isEmpty: return .join(rest)
            case "leave" where !rest.isEmpty: return .leave(rest)
            case "recall": return .recall
            case "edit" where !rest.isEmpty: return .edit(rest)
            case "react" where !rest.isEmpty: return .react(rest)
            case "quit", "exit": return .quit
            default: return .help
            }
        }
        if let target = defaultTarget {
            return parse(target.hasPrefix("#") ? "\(target) \(trimmed)" : "@\(target) \(trimmed)", defaultTarget: nil)
        }
        return .help
    }

    /// What the client understands.
    static let usage = """
        commands: @PEER TEXT (one-to-one) | #GROUP TEXT (group) | /join GROUP | /leave GROUP
                  /recall (your last message) | /edit TEXT (your last message)
                  /react EMOJI (the last message you received) | /quit
        """
}

extension StringProtocol {
    /// The string without leading and trailing spaces and tabs.
    func trimmingSpaces() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" || $0 == "\n" }
        guard let first = firstIndex(where: { !isSpace($0) }) else { return "" }
        let last = lastIndex(where: { !isSpace($0) })!
        return String(self[first...last])
    }
}

/// The chat client's protocol logic, on IMCodecNIO's async API (``IMCodecFrameChannel``): logs in
/// (login_request with a JWT, a device id and its stream position), catches up with its stream
/// (``ResumeTracker``: the messages and events it missed, each once), pings at the heartbeat
/// interval, prints what arrives, answers messages that ask for a read receipt, acknowledges its
/// stream position, and turns ``ChatCommand``s into frames.
actor ChatSession {
    let user: String
    private let token: String
    private let joins: [String]
    private let output: @Sendable (String) -> Void
    /// Finishes once logged in and caught up; throws when the connection ends before that.
    nonisolated let loggedIn: AsyncThrowingStream<Void, any Error>
    private let loggedInContinuation: AsyncThrowingStream<Void, any Error>.Continuation
    private var outbound: NIOAsyncChannelOutboundWriter<Frame>?
    /// Each sent message waiting for its send ack, and the stream its sender waits on.
    private var unacked: [String: (message: Message, acked: AsyncStream<Void>.Continuation)] = [:]
    private var lastSent: Message?
    private var lastReceived: Message?
    private var resume: ResumeTracker
    private let deviceID: String
    private var nextRequestID: UInt64 = 0
    /// What each request waiting for its answer was: a join or leave of a group.
    private var requests: [UInt64: (joining: Bool, group: String)] = [:]
    private var heartbeat: Task<Void, Never>?
    /// How many sent messages the relay refused (a send ack with a non-zero error code).
    private(set) var refusedSends = 0
    /// Kept frames handed on since the last stream ack.
    private var unackedFrames = 0

    init(
        user: String,
        token: String,
        deviceID: String,
        joins: [String],
        resume: ResumeTracker? = nil,
        output: @escaping @Sendable (String) -> Void
    ) {
        self.user = user
        self.token = token
        self.joins = joins
        self.output = output
        self.resume = resume ?? ResumeTracker(user: user)
        self.deviceID = deviceID
        (loggedIn, loggedInContinuation) = AsyncThrowingStream.makeStream()
    }

    /// What this client has shown per conversation: give it to a new connection to resume.
    var resumeState: ResumeTracker { resume }

    /// Runs the session on `connection` until it closes: logs in, then handles each frame that
    /// arrives. A frame that does not decode ends the session (printed as `! error`).
    func run(_ connection: IMCodecFrameChannel) async {
        do {
            try await connection.withFrames { inbound, outbound in
                self.outbound = outbound
                await logIn()
                for try await received in inbound {
                    await receive(try received.decode())
                    // Acknowledges the stream position as frames arrive, so that this device's
                    // next login without a position of its own (a new `chat` process with the
                    // same `--device`) resumes after them.
                    if unackedFrames > 0, !resume.isCatchingUp {
                        unackedFrames = 0
                        await send(Frame(.streamAck(resume.streamAck)))
                    }
                }
            }
        } catch {
            // A frame that did not decode, or a broken connection (not this client's own close).
            if !Task.isCancelled { output("! \(error)") }
        }
        closed()
    }

    private func closed() {
        outbound = nil
        loggedInContinuation.finish(throwing: ChannelError.ioOnClosedChannel)
        heartbeat?.cancel()
        heartbeat = nil
        for (_, pending) in unacked { pending.acked.finish() }
        unacked = [:]
    }

    private func requestID() -> UInt64 {
        nextRequestID += 1
        return nextRequestID
    }

    private func membership(_ action: MembershipAction, _ group: String) -> Frame {
        let id = requestID()
        requests[id] = (action == .join, group)
        return RelayProtocol.membershipFrame(action, group: group, requestID: id)
    }

    private func logIn() async {
        let login = RelayProtocol.loginFrame(
            user,
            token: token,
            deviceID: deviceID,
            platform: .linux,
            lastSeen: resume.lastSeen,
            streamResume: true,
            streamPosition: resume.streamPosition,
            requestID: requestID()
        )
        await send(login)
        for group in joins { await send(membership(.join, group)) }
    }

    /// Writes `frame`; a write on a closing connection is dropped (the session ends with it).
    private func send(_ frame: Frame) async {
        try? await outbound?.write(frame)
    }

    /// Carries out `command`; returns (`false` after `/quit` or once the connection is closed) once
    /// a sent message is acknowledged, so that scripted commands such as `/recall` see the ack of
    /// the message before.
    func perform(_ command: ChatCommand) async -> Bool {
        guard outbound != nil else { return false }
        switch command {
        case .sendDirect(let peer, let text):
            return await sendText(
                Message(
                    from: user,
                    in: .oneToOne(peer),
                    elements: [.text(text)],
                    flags: [.saveToHistory, .needReadReceipt]
                )
            )
        case .sendGroup(let group, let text):
            return await sendText(
                Message(
                    from: user,
                    in: .group(group),
                    elements: [.text(text)],
                    flags: [.saveToHistory, .needReadReceipt]
                )
            )
        case .join(let group):
            await send(membership(.join, group))
        case .leave(let group):
            await send(membership(.leave, group))
        case .recall:
            guard let last = lastSent else { output("! nothing to recall yet"); break }
            await send(Frame.recall(last.reference, by: user))
            output("* recalled: \(last.previewText)")
        case .edit(let text):
            guard var last = lastSent else { output("! nothing to edit yet"); break }
            let reference = last.reference
            // The relay counts the edits (edit_version is the server's to set).
            last.elements = [.text(text)]
            lastSent = last
            await send(
                Frame(
                    .edit(
                        EditEvent.with {
                            $0.message = reference
                            $0.newMessage = last
                            $0.editorID = user
                            $0.timeMs = RelayProtocol.nowMs()
                        }
                    )
                )
            )
            output("* edited to: \(text)")
        case .react(let emoji):
            guard let last = lastReceived else { output("! nothing to react to yet"); break }
            await send(
                Frame(
                    .reaction(
                        ReactionEvent.with {
                            $0.message = last.reference
                            $0.userID = user
                            $0.emoji = emoji
                            $0.action = .add
                            $0.timeMs = RelayProtocol.nowMs()
                        }
                    )
                )
            )
            output("* reacted \(emoji) to: \(last.previewText)")
        case .quit:
            return false
        case .help:
            output(ChatCommand.usage)
        }
        return true
    }

    private func sendText(_ message: Message) async -> Bool {
        let (acked, continuation) = AsyncStream<Void>.makeStream()
        unacked[message.clientMsgID] = (message, continuation)
        await send(Frame(message))
        // Do not wait forever for an ack that a closing relay will never send.
        let timeout = Task {
            try? await Task.sleep(nanoseconds: 5_000_000_000)
            continuation.finish()
        }
        for await _ in acked { break }
        timeout.cancel()
        return true
    }

    private static func place(_ conversation: Conversation?, sender: String) -> String {
        guard let conversation else { return sender }
        return conversation.type == .group ? "\(sender) in #\(conversation.targetID)" : sender
    }

    private func receive(_ frame: Frame) async {
        switch frame.payload {
        case .loginResult(let result)?:
            guard result.errorCode == 0 else {
                output("! login refused: error \(result.errorCode): \(result.errorDescription)")
                loggedInContinuation.finish(throwing: ChannelError.ioOnClosedChannel)
                return
            }
            output("* logged in as \(user) (device \(deviceID))")
            startHeartbeat(seconds: result.heartbeatIntervalS)
            await send(Frame(.streamSyncRequest(resume.streamLoggedIn(result))))
        case .streamSyncResponse(let response)?:
            if response.errorCode != 0 { output("! stream sync failed: \(response.errorDescription)") }
            if response.truncated { output("! the relay dropped some of what this device missed (retention)") }
            let (frames, next) = resume.streamSynced(response)
            for frame in frames { await display(frame) }
            if let next {
                await send(Frame(.streamSyncRequest(next)))
            } else {
                // Caught up: ready, so that scripted commands (--send) come after what was missed.
                unackedFrames = 0
                await send(Frame(.streamAck(resume.streamAck)))
                loggedInContinuation.yield()
                loggedInContinuation.finish()
            }
        default:
            guard resume.accept(frame) else { return }  // Already handed on by the stream sync.
            await display(frame)
            if frame.streamPosition != 0 { unackedFrames += 1 }
        }
    }

    /// Prints a frame that arrived (live or through the stream sync).
    private func display(_ frame: Frame) async {
        switch frame.payload {
        case .requestResult(let result)?:
            guard let request = requests.removeValue(forKey: frame.requestID) else { break }
            if result.errorCode != 0 {
                output(
                    "! could not \(request.joining ? "join" : "leave") #\(request.group): \(result.errorDescription)"
                )
            } else {
                output("* \(request.joining ? "joined" : "left") #\(request.group)")
            }
        case .pong?:
            break
        case .kickedOffline(let kicked)? where kicked.reason == .tokenExpired:
            output("! logged out: the login token expired")
        case .kickedOffline(let kicked)?:
            let device = kicked.otherDeviceID.isEmpty ? "" : " (device \(kicked.otherDeviceID))"
            output("! logged out: \(user) logged in elsewhere\(device)")
        case .membership(let change)?:
            let what = change.action == .join ? "joined" : "left"
            output("* \(change.userID) \(what) #\(change.conversation?.targetID ?? "")")
        case .presence(let presence)?:
            output("* \(presence.userID) is \(presence.status == .online ? "online" : "offline")")
        case .systemNotice(let notice)? where notice.type == RelayProtocol.error:
            output("! relay error \(notice.params["code"] ?? ""): \(notice.params["reason"] ?? notice.text)")
        case .systemNotice(let notice)?:
            let sender = notice.params[RelayProtocol.noticeSenderKey].map { " from \($0)" } ?? ""
            output("* notice\(sender) \(notice.type): \(notice.text)")
        case .sendAck(let ack)?:
            guard let (sent, acked) = unacked.removeValue(forKey: ack.clientMsgID) else { break }
            defer { acked.finish() }
            var message = sent
            let target = ack.conversation.map { $0.type == .group ? "#\($0.targetID)" : $0.targetID } ?? "?"
            if ack.errorCode == 0 {
                message.serverMsgUID = ack.serverMsgUID
                message.seq = ack.seq
                message.serverTimeMs = ack.serverTimeMs
                lastSent = message
                output("✓ sent to \(target) (seq \(ack.seq), id \(ack.serverMsgUID))")
            } else {
                refusedSends += 1
                output("✗ not sent to \(target): error \(ack.errorCode): \(ack.errorDescription)")
            }
        case .message(let message)?:
            await show(message)
        case .receipt(let receipt)?:
            showReceipt(receipt)
        case .receipts(let batch)?:
            for receipt in batch.receipts { showReceipt(receipt) }
        case .recall(let recall)?:
            output("* \(recall.revokerID) recalled a message (seq \(recall.message?.seq ?? 0))")
        case .edit(let edit)?:
            output(
                "* \(edit.editorID) edited a message (seq \(edit.message?.seq ?? 0)): \(edit.newMessage?.previewText ?? "")"
            )
        case .typing(let typing)?:
            output("* \(typing.userID) is \(typing.state == .started ? "typing" : "not typing")")
        case .reaction(let reaction)?:
            let verb = reaction.action == .remove ? "removed" : "reacted"
            output("* \(reaction.userID) \(verb) \(reaction.emoji) (seq \(reaction.message?.seq ?? 0))")
        case .markRead(let read)?:
            output("* read up to seq \(read.readSeq) in \(read.conversation?.targetID ?? "?") on another device")
        case let other:
            output("* frame: \(other?.kind.protoName ?? "empty")")
        }
    }

    /// Prints a receipt: another user's for a message of ours, or our own from another device.
    private func showReceipt(_ receipt: MessageReceipt) {
        let what = receipt.kind == .delivered ? "received" : "read"
        let seq = receipt.message?.seq ?? 0
        if receipt.userID == user {
            output("✓✓ you \(what) \(receipt.message?.senderID ?? "?")'s message on another device (seq \(seq))")
        } else {
            output("✓✓ \(receipt.userID) \(what) your message (seq \(seq))")
        }
    }

    /// Prints a message (live or synced) and answers it with a read receipt when it asks for one;
    /// one this user sent from another device is printed as sent.
    private func show(_ message: Message) async {
        guard message.senderID != user else {
            let target = message.conversation.map { $0.type == .group ? "#\($0.targetID)" : $0.targetID } ?? "?"
            output("[me → \(target), from another device] \(message.previewText)  (seq \(message.seq))")
            return
        }
        lastReceived = message
        output(
            "[\(Self.place(message.conversation, sender: message.senderID))] \(message.previewText)  (seq \(message.seq))"
        )
        if message.messageFlags.contains(.needReadReceipt) {
            await send(Frame.readReceipt(for: message.reference, by: user))
        }
    }

    private func startHeartbeat(seconds: UInt32) {
        heartbeat?.cancel()
        guard seconds > 0 else { return }
        let interval = UInt64(seconds) * 1_000_000_000
        heartbeat = Task {
            while true {
                do { try await Task.sleep(nanoseconds: interval) } catch { return }
                await ping()
            }
        }
    }

    private func ping() async {
        await send(
            RelayProtocol.answer(
                .ping(
                    Ping.with {
                        $0.id = requestID()
                        $0.timeMs = RelayProtocol.nowMs()
                    }
                ),
                requestID: 0
            )
        )
    }
}

/// A connected chat client: owns its event loop group, its connection (a ``IMCodecFrameChannel``)
/// and the task that runs its ``ChatSession``.
final class ChatClient: Sendable {
    /// The client's channel.
    let channel: any Channel
    private let group: MultiThreadedEventLoopGroup
    private let session: ChatSession
    private let running: Task<Void, Never>

    private init(
        channel: any Channel,
        group: MultiThreadedEventLoopGroup,
        session: ChatSession,
        running: Task<Void, Never>
    ) {
        self.channel = channel
        self.group = group
        self.session = session
        self.running = running
    }

    /// Connects to the relay at `host:port`, logs in as `user`, joins `groups`; returns once logged in and
    /// the messages missed meanwhile (sync) are shown.
    ///
    /// With `resume` (``resumeState()`` of an earlier client of `user` on the same device), the login
    /// names the stream position that client had reached, and only what it missed is synced and
    /// shown, each frame once.
    static func connect(
        host: String,
        port: Int,
        user: String,
        token: String,
        deviceID: String,
        joins: [String],
        resume: ResumeTracker? = nil,
        output: @escaping @Sendable (String) -> Void
    ) async throws -> ChatClient {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let connection: IMCodecFrameChannel
        do {
            connection = try await ClientBootstrap(group: group)
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .connect(host: host, port: port) { channel in IMCodecFrameChannel.framing(channel) }
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
        let session = ChatSession(
            user: user,
            token: token,
            deviceID: deviceID,
            joins: joins,
            resume: resume,
            output: output
        )
        let running = Task { await session.run(connection) }
        do {
            for try await _ in session.loggedIn {}
        } catch {
            // Refused, or closed before the login completed: end the session and the loop.
            running.cancel()
            await running.value
            try? await group.shutdownGracefully()
            throw error
        }
        return ChatClient(channel: connection.channel, group: group, session: session, running: running)
    }

    /// Carries out `command`; returns `false` after `/quit` or once the connection is closed.
    func perform(_ command: ChatCommand) async -> Bool {
        await session.perform(command)
    }

    /// What the client has shown per conversation, for ``connect(host:port:user:token:deviceID:joins:resume:output:)``.
    func resumeState() async -> ResumeTracker {
        await session.resumeState
    }

    /// How many sent messages the relay has refused so far.
    func refusedSends() async -> Int {
        await session.refusedSends
    }

    /// One line for people saying why connecting to `host:port` failed: `cannot connect to
    /// 127.0.0.1:7070: connection refused` rather than NIO's description of every attempt.
    static func connectFailure(_ error: any Error, host: String, port: Int) -> String {
        var cause = error
        if let connection = error as? NIOConnectionError, let first = connection.connectionErrors.first {
            cause = first.error
        }
        if case ChannelError.ioOnClosedChannel = cause {
            return "cannot connect to \(host):\(port): the relay closed the connection before the login completed"
        }
        return "cannot connect to \(host):\(port): \(connectReason(cause))"
    }

    /// Why a connection failed, in the system's words (`connection refused`, `timed out`); also
    /// the PostgreSQL store's (``PostgresRelayStore``).
    static func connectReason(_ error: any Error) -> String {
        var cause = error
        if let connection = error as? NIOConnectionError, let first = connection.connectionErrors.first {
            cause = first.error
        }
        if let io = cause as? IOError {
            let text = String(cString: strerror(io.errnoCode))
            return text.prefix(1).lowercased() + text.dropFirst()
        }
        if case ChannelError.connectTimeout = cause { return "timed out" }
        return "\(cause)"
    }

    /// Closes the connection (cancelling the session's task closes it: ``IMCodecFrameChannel``'s
    /// `withFrames`) and stops the event loop.
    func close() async {
        running.cancel()
        await running.value
        try? await group.shutdownGracefully()
    }
}
#endif
