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

/// The chat client's protocol logic: logs in (login_request with a JWT, a device id and its stream
/// position), catches up with its stream (``ResumeTracker``: the messages and events it missed, each
/// once), pings at the heartbeat interval, prints what arrives, answers messages that ask for a read
/// receipt, acknowledges its stream position, and turns ``ChatCommand``s into frames.
final class ChatClientHandler: ChannelInboundHandler {
    typealias InboundIn = Frame
    typealias OutboundOut = Frame

    let user: String
    private let token: String
    private let joins: [String]
    private let output: @Sendable (String) -> Void
    private let loggedIn: EventLoopPromise<Void>
    private var context: ChannelHandlerContext?
    private var unacked: [String: (message: Message, acked: EventLoopPromise<Void>)] = [:]
    private var lastSent: Message?
    private var lastReceived: Message?
    private var resume: ResumeTracker
    private let deviceID: String
    private var nextRequestID: UInt64 = 0
    /// What each request waiting for its answer was: a join or leave of a group.
    private var requests: [UInt64: (joining: Bool, group: String)] = [:]
    private var heartbeat: RepeatedTask?
    /// How many sent messages the relay refused (a send ack with a non-zero error code).
    private(set) var refusedSends = 0

    /// Kept frames handed on since the last stream ack.
    private var unackedFrames = 0

    init(
        user: String, token: String, deviceID: String, joins: [String], resume: ResumeTracker? = nil,
        loggedIn: EventLoopPromise<Void>, output: @escaping @Sendable (String) -> Void
    ) {
        self.user = user
        self.token = token
        self.joins = joins
        self.loggedIn = loggedIn
        self.output = output
        self.resume = resume ?? ResumeTracker(user: user)
        self.deviceID = deviceID
    }

    /// What this client has shown per conversation: give it to a new connection to resume.
    var resumeState: ResumeTracker { resume }

    private func requestID() -> UInt64 {
        nextRequestID += 1
        return nextRequestID
    }

    private func membership(_ action: MembershipAction, _ group: String) -> Frame {
        let id = requestID()
        requests[id] = (action == .join, group)
        return RelayProtocol.membershipFrame(action, group: group, requestID: id)
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    func channelActive(context: ChannelHandlerContext) {
        let login = RelayProtocol.loginFrame(
            user, token: token, deviceID: deviceID, platform: .linux, lastSeen: resume.lastSeen, streamResume: true,
            streamPosition: resume.streamPosition, requestID: requestID())
        context.write(wrapOutboundOut(login), promise: nil)
        for group in joins { context.write(wrapOutboundOut(membership(.join, group)), promise: nil) }
        context.flush()
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        loggedIn.fail(ChannelError.ioOnClosedChannel)
        heartbeat?.cancel()
        heartbeat = nil
        for (_, pending) in unacked { pending.acked.succeed() }
        unacked = [:]
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        output("! \(error)")
        context.close(promise: nil)
    }

    private func send(_ frame: Frame) {
        guard let context else { return }
        context.writeAndFlush(wrapOutboundOut(frame), promise: nil)
    }

    /// Carries out `command`; the future completes (`false` after `/quit`) once a sent message is
    /// acknowledged, so that scripted commands such as `/recall` see the ack of the message before.
    func perform(_ command: ChatCommand) -> EventLoopFuture<Bool> {
        guard let context else { return loggedIn.futureResult.eventLoop.makeSucceededFuture(false) }
        let loop = context.eventLoop
        switch command {
        case .sendDirect(let peer, let text):
            return sendText(Message(
                from: user, in: .oneToOne(peer), elements: [.text(text)], flags: [.saveToHistory, .needReadReceipt]))
        case .sendGroup(let group, let text):
            return sendText(Message(
                from: user, in: .group(group), elements: [.text(text)], flags: [.saveToHistory, .needReadReceipt]))
        case .join(let group):
            send(membership(.join, group))
        case .leave(let group):
            send(membership(.leave, group))
        case .recall:
            guard let last = lastSent else { output("! nothing to recall yet"); break }
            send(Frame.recall(last.reference, by: user))
            output("* recalled: \(last.previewText)")
        case .edit(let text):
            guard var last = lastSent else { output("! nothing to edit yet"); break }
            let reference = last.reference
            last.elements = [.text(text)]
            last.editVersion += 1
            send(Frame(.edit(EditEvent.with {
                $0.message = reference
                $0.newMessage = last
                $0.editorID = user
                $0.timeMs = RelayProtocol.nowMs()
            })))
            lastSent = last
            output("* edited to: \(text)")
        case .react(let emoji):
            guard let last = lastReceived else { output("! nothing to react to yet"); break }
            send(Frame(.reaction(ReactionEvent.with {
                $0.message = last.reference
                $0.userID = user
                $0.emoji = emoji
                $0.action = .add
                $0.timeMs = RelayProtocol.nowMs()
            })))
            output("* reacted \(emoji) to: \(last.previewText)")
        case .quit:
            return loop.makeSucceededFuture(false)
        case .help:
            output(ChatCommand.usage)
        }
        return loop.makeSucceededFuture(true)
    }

    private func sendText(_ message: Message) -> EventLoopFuture<Bool> {
        let loop = context!.eventLoop
        let acked = loop.makePromise(of: Void.self)
        unacked[message.clientMsgID] = (message, acked)
        send(Frame(message))
        // Do not wait forever for an ack that a closing relay will never send.
        let timeout = loop.scheduleTask(in: .seconds(5)) { acked.succeed() }
        return acked.futureResult.map {
            timeout.cancel()
            return true
        }
    }

    private static func place(_ conversation: Conversation?, sender: String) -> String {
        guard let conversation else { return sender }
        return conversation.type == .group ? "\(sender) in #\(conversation.targetID)" : sender
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case .loginResult(let result)?:
            guard result.errorCode == 0 else {
                output("! login refused: error \(result.errorCode): \(result.errorDescription)")
                loggedIn.fail(ChannelError.ioOnClosedChannel)
                return
            }
            output("* logged in as \(user) (device \(deviceID))")
            startHeartbeat(context: context, seconds: result.heartbeatIntervalS)
            send(Frame(.streamSyncRequest(resume.streamLoggedIn(result))))
        case .streamSyncResponse(let response)?:
            if response.errorCode != 0 { output("! stream sync failed: \(response.errorDescription)") }
            if response.truncated { output("! the relay dropped some of what this device missed (retention)") }
            let (frames, next) = resume.streamSynced(response)
            for frame in frames { display(frame) }
            if let next {
                send(Frame(.streamSyncRequest(next)))
            } else {
                // Caught up: ready, so that scripted commands (--send) come after what was missed.
                send(Frame(.streamAck(resume.streamAck)))
                unackedFrames = 0
                loggedIn.succeed()
            }
        default:
            guard resume.accept(frame) else { return }  // Already handed on by the stream sync.
            display(frame)
            if frame.streamPosition != 0 { unackedFrames += 1 }
        }
    }

    /// Acknowledges the stream position after each read, so that this device's next login without
    /// a position of its own (a new `chat` process with the same `--device`) resumes after it.
    func channelReadComplete(context: ChannelHandlerContext) {
        if unackedFrames > 0, !resume.isCatchingUp {
            send(Frame(.streamAck(resume.streamAck)))
            unackedFrames = 0
        }
        context.fireChannelReadComplete()
    }

    /// Prints a frame that arrived (live or through the stream sync).
    private func display(_ frame: Frame) {
        switch frame.payload {
        case .requestResult(let result)?:
            guard let request = requests.removeValue(forKey: frame.requestID) else { break }
            if result.errorCode != 0 {
                output("! could not \(request.joining ? "join" : "leave") #\(request.group): \(result.errorDescription)")
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
            output("* notice \(notice.type): \(notice.text)")
        case .sendAck(let ack)?:
            guard let (sent, acked) = unacked.removeValue(forKey: ack.clientMsgID) else { break }
            defer { acked.succeed() }
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
            show(message)
        case .receipt(let receipt)?:
            showReceipt(receipt)
        case .receipts(let batch)?:
            for receipt in batch.receipts { showReceipt(receipt) }
        case .recall(let recall)?:
            output("* \(recall.revokerID) recalled a message (seq \(recall.message?.seq ?? 0))")
        case .edit(let edit)?:
            output("* \(edit.editorID) edited a message (seq \(edit.message?.seq ?? 0)): \(edit.newMessage?.previewText ?? "")")
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
    private func show(_ message: Message) {
        guard message.senderID != user else {
            let target = message.conversation.map { $0.type == .group ? "#\($0.targetID)" : $0.targetID } ?? "?"
            output("[me → \(target), from another device] \(message.previewText)  (seq \(message.seq))")
            return
        }
        lastReceived = message
        output("[\(Self.place(message.conversation, sender: message.senderID))] \(message.previewText)  (seq \(message.seq))")
        if message.messageFlags.contains(.needReadReceipt) {
            send(Frame.readReceipt(for: message.reference, by: user))
        }
    }

    private func startHeartbeat(context: ChannelHandlerContext, seconds: UInt32) {
        heartbeat?.cancel()
        guard seconds > 0 else { return }
        let interval = TimeAmount.seconds(Int64(seconds))
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        heartbeat = context.eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { _ in
            let me = handler.value
            me.send(RelayProtocol.answer(.ping(Ping.with {
                $0.id = me.requestID()
                $0.timeMs = RelayProtocol.nowMs()
            }), requestID: 0))
        }
    }
}

/// A connected chat client: owns its event loop group and its channel.
final class ChatClient: Sendable {
    /// The client's channel.
    let channel: any Channel
    private let group: MultiThreadedEventLoopGroup
    private let handler: NIOLoopBound<ChatClientHandler>

    private init(channel: any Channel, group: MultiThreadedEventLoopGroup, handler: NIOLoopBound<ChatClientHandler>) {
        self.channel = channel
        self.group = group
        self.handler = handler
    }

    /// Connects to the relay at `host:port`, logs in as `user`, joins `groups`; completes once logged in and
    /// the messages missed meanwhile (sync) are shown.
    ///
    /// With `resume` (``resumeState()`` of an earlier client of `user` on the same device), the login
    /// names the stream position that client had reached, and only what it missed is synced and
    /// shown, each frame once.
    static func connect(
        host: String, port: Int, user: String, token: String, deviceID: String, joins: [String],
        resume: ResumeTracker? = nil, output: @escaping @Sendable (String) -> Void
    ) -> EventLoopFuture<ChatClient> {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        return loop.flatSubmit {
            let loggedIn = loop.makePromise(of: Void.self)
            let handler = NIOLoopBound(
                ChatClientHandler(
                    user: user, token: token, deviceID: deviceID, joins: joins, resume: resume, loggedIn: loggedIn,
                    output: output),
                eventLoop: loop)
            return connect(host: host, port: port, group: group, loop: loop, handler: handler, loggedIn: loggedIn)
        }
    }

    private static func connect(
        host: String, port: Int, group: MultiThreadedEventLoopGroup, loop: any EventLoop,
        handler: NIOLoopBound<ChatClientHandler>, loggedIn: EventLoopPromise<Void>
    ) -> EventLoopFuture<ChatClient> {
        ClientBootstrap(group: loop)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addFrameCodec()
                    try channel.pipeline.syncOperations.addHandler(handler.value)
                }
            }
            .connect(host: host, port: port)
            .flatMap { channel in
                loggedIn.futureResult.map { ChatClient(channel: channel, group: group, handler: handler) }
            }
            .flatMapError { error in
                // No connection, so no login: complete the promise (NIO treats a promise that is never
                // completed as a leak and stops the process).
                loggedIn.fail(error)
                group.shutdownGracefully { _ in }
                return loop.makeFailedFuture(error)
            }
    }

    /// Carries out `command` on the client's event loop; the future is `false` after `/quit`.
    func perform(_ command: ChatCommand) -> EventLoopFuture<Bool> {
        channel.eventLoop.flatSubmit { self.handler.value.perform(command) }
    }

    /// What the client has shown per conversation, for ``connect(host:port:user:token:deviceID:joins:resume:output:)``.
    func resumeState() -> EventLoopFuture<ResumeTracker> {
        channel.eventLoop.submit { self.handler.value.resumeState }
    }

    /// How many sent messages the relay has refused so far.
    func refusedSends() -> EventLoopFuture<Int> {
        channel.eventLoop.submit { self.handler.value.refusedSends }
    }

    /// One line for people saying why connecting to `host:port` failed: `cannot connect to
    /// 127.0.0.1:7070: connection refused` rather than NIO's description of every attempt.
    static func connectFailure(_ error: any Error, host: String, port: Int) -> String {
        var cause = error
        if let connection = error as? NIOConnectionError, let first = connection.connectionErrors.first {
            cause = first.error
        }
        let reason: String
        if let io = cause as? IOError {
            let text = String(cString: strerror(io.errnoCode))
            reason = text.prefix(1).lowercased() + text.dropFirst()
        } else if case ChannelError.connectTimeout = cause {
            reason = "timed out"
        } else if case ChannelError.ioOnClosedChannel = cause {
            reason = "the relay closed the connection before the login completed"
        } else {
            reason = "\(cause)"
        }
        return "cannot connect to \(host):\(port): \(reason)"
    }

    /// Closes the connection and stops the event loop.
    func close() async {
        try? await channel.close()
        try? await group.shutdownGracefully()
    }

    /// Closes the connection and stops the event loop (blocking; not for async contexts).
    func closeAndWait() {
        try? channel.close().wait()
        try? group.syncShutdownGracefully()
    }
}
#endif
