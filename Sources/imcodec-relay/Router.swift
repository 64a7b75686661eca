#if Tools
import HeapModule
import IMCodec
import IMCodecNIO
import Logging
import NIOCore
import NIOWebSocket

/// The routing table and the routing rules. Lives on the relay's event loop; what it promises is
/// kept in its ``StoreQueue``'s store.
///
/// Everything is decided here, in memory, in the order frames arrive: seqs, stream positions, who
/// gets what. The writes go to the store queue's batch, and what depends on them (acks, forwards,
/// answers) runs after their commit, in the same order (``StoreQueue/afterCommit(_:)``). So a
/// client is told of a frame only once it is durable, and every device sees every user's stream in
/// position order.
final class Router {
    let eventLoop: any EventLoop
    let configuration: RelayConfiguration
    let store: StoreQueue
    let authenticator: RelayAuthenticator
    /// The relay's metrics (``RelayMetrics``), updated where the things they count happen.
    let metrics: RelayMetrics
    /// Where connections, logins, closes and errors are logged (``RelayConfiguration/logger``).
    let logger: Logger
    /// Called once when the store fails: the relay stops.
    var onFatal: (String) -> Void = { _ in }

    /// The logged-in sessions of each user, one per device.
    var sessions: [String: [Session]] = [:]
    var connections: [ObjectIdentifier: Session] = [:]
    /// Members of each group, chatroom and ultra-group channel.
    var members: [ConversationKey: Set<String>] = [:]
    /// Per group, chatroom or channel, the users who left it, each with its stream head when it
    /// left (Router+EmptyGroups.swift).
    var leavePositions: [ConversationKey: [String: UInt64]] = [:]
    /// The groups, chatrooms and channels whose last member left, until the sweep frees them.
    var emptyGroups: Set<ConversationKey> = []
    /// The conversations each user belongs to: one-to-one ones with history, shared ones it is a member of.
    var belongs: [String: Set<ConversationKey>] = [:]
    /// Seqs, resend de-duplication and removed messages of each conversation.
    var conversations: [ConversationKey: ConversationState] = [:]
    /// Each user's stream.
    var streams: [String: StreamState] = [:]
    /// The id the router gave the newest event (``KeptEvent``), or at start the largest id kept: the
    /// next one gets the id after it.
    var lastEventID: UInt64 = 0
    /// The last stream position each device acknowledged.
    var devicePositions: [DeviceKey: UInt64] = [:]
    /// The newest events each device sent, so that a resend is not applied twice.
    var recentEvents: [DeviceKey: RecentEvents] = [:]
    /// The devices whose ``recentEvents`` changed since the pending commit began: each one's window
    /// is written once, as the commit is handed to the store (``remember(_:sentBy:)``).
    var changedWindows: Set<DeviceKey> = []
    /// The newest messages each user sent that the relay does not keep, so that a resend is acknowledged
    /// as the first time and delivered once.
    var recentLiveMessages: [String: RecentLiveMessages] = [:]
    /// Who subscribed to each user's presence.
    var subscribers: [String: Set<String>] = [:]
    /// Whose presence each user subscribed to (``subscribers`` the other way round).
    var watching: [String: Set<String>] = [:]
    /// When each user that went offline was last online.
    var lastOnlineMs: [String: Int64] = [:]
    /// The end-to-end key bundles each device published, by user, device and kind (opaque bytes;
    /// see Router+Requests.swift), as stored: a publish and a fetch that hands out a one-time key
    /// are answered once committed, so a restarted relay serves the same bundles and never hands out
    /// a one-time key twice.
    var keyBundles: [String: [String: [KeyBundleKind: KeyBundle]]] = [:]
    /// Each user's view of its conversations (the conversation list; Router+Conversations.swift).
    var userConversations: [String: [ConversationKey: UserConversation]] = [:]
    /// Per user, its one-to-one conversations: with messages (in ``belongs``) or a view alone
    /// (``Router/mayStart(_:user:)``, bounded by ``RelayConfiguration/maxDirectConversations``).
    var directConversationCounts: [String: Int] = [:]
    /// Per user and conversation, the messages it deleted for itself only (Router+OwnState.swift):
    /// no read of its serves them.
    var deletedForMe: [String: [ConversationKey: Set<UInt64>]] = [:]
    /// Per conversation, the users who set RECEIVE_OPTION_NOT_RECEIVE on it: its messages are kept
    /// in none of their streams (``noteReceiveOption(_:of:for:)``).
    var notReceiving: [ConversationKey: Set<String>] = [:]
    /// Whom each user blocked, and in which order (Router+OwnState.swift).
    var blocked: [String: Set<String>] = [:]
    var blockOrder: [String: [String]] = [:]
    /// The extension of each kept message sent with MESSAGE_FLAG_SUPPORT_EXTENSION, by key, removed
    /// keys included (their versions go on; Router+Extensions.swift).
    var extensions: [ConversationKey: [UInt64: [String: ExtensionEntry]]] = [:]
    /// What changed on kept messages since they were sent, by conversation and seq: the last edit's
    /// content, the number of edits the relay applied (`edit_version`), and `updated_at_ms` of the
    /// last edit or extension update (Router+History.swift).
    var messageChanges: [ConversationKey: [UInt64: Message]] = [:]
    /// The polls of kept messages with every vote, by conversation and seq (Router+Polls.swift).
    var polls: [ConversationKey: [UInt64: [PollTally]]] = [:]
    /// The open polls with a `close_time_ms`, soonest first: the relay closes them then.
    var closingPolls = PrunedHeap<ClosingPoll>()
    /// When the results of each message's polls were last sent after a vote (by ``nowMs()``), while
    /// the interval that holds back the next ones runs (``RelayConfiguration/pollResultsInterval``).
    var pollResultsSent: [MessageKey: Int64] = [:]
    /// The polls of each message whose results after a vote are held back until then (their ids; a
    /// state record, so across restarts).
    var heldPollResults: [MessageKey: Set<String>] = [:]
    /// How many messages each group, chatroom or ultra group carried in the current second, while
    /// it carries any (Router+Priority.swift).
    var groupLoads: [ConversationKey: GroupLoad] = [:]
    /// What each user may still have the relay do, while it spends it (Router+RateLimits.swift):
    /// typing and status updates, the users its frames reach, the one-time keys it takes from
    /// each user's devices, the frames it sends each peer, its joins and its logins.
    var liveUpdateBudgets: RateBudgets<String>
    var fanOutBudgets: RateBudgets<String>
    var keyFetchBudgets: RateBudgets<UserPair>
    var peerBudgets: RateBudgets<UserPair>
    var joinBudgets: RateBudgets<String>
    var loginBudgets: RateBudgets<String>
    /// Who read each kept message sent with `MESSAGE_FLAG_NEED_READ_RECEIPT`, in the order they
    /// read it, with its counts as last counted, by conversation and seq (Router+Receipts.swift).
    var messageReaders: [ConversationKey: [UInt64: MessageReaders]] = [:]
    /// Per conversation, when its audience last changed (a member joined or left, a user's
    /// `cleared_seq` moved): read counts counted before are counted again (Router+Receipts.swift).
    /// Values come from ``lastAudienceEpoch`` and are never given twice.
    var audienceEpochs: [ConversationKey: UInt64] = [:]
    var lastAudienceEpoch: UInt64 = 0
    /// The kept view-once messages of each conversation (Router+ViewOnce.swift).
    var viewOnceMessages: [ConversationKey: Set<UInt64>] = [:]
    /// Each device's floor: the user's stream head when the relay first saw the device log in. A
    /// view-once message at or below it reaches the device without its content (Router+ViewOnce).
    var deviceFloors: [DeviceKey: UInt64] = [:]
    /// Per user, its devices and when each was last seen, as a counter per user (Router+Devices.swift),
    /// bounded by ``RelayConfiguration/maxDevicesPerUser``.
    var knownDevices: [String: [String: UInt64]] = [:]
    /// The kept replies whose `quote_snapshot` quotes the text of each kept message, by the quoted
    /// message's conversation and seq: their snapshots lose that text when it is recalled, deleted
    /// for everyone or expires (Router+Quotes.swift).
    var quotedBy: [ConversationKey: [UInt64: Set<MessageKey>]] = [:]
    /// The same links the other way: per kept reply, the messages whose text it quotes (a reply
    /// quotes one, and an edit may make it quote another), so that a reply retention drops, or one
    /// removed, takes its links along (Router+Quotes.swift).
    var quoting: [ConversationKey: [UInt64: [MessageKey]]] = [:]
    /// The message uids and session ids this start gives out.
    var ids = ServerIDs()
    /// The kept disappearing messages not yet erased, soonest first (Router+Expiry.swift); those
    /// recalled or dropped by retention since go at the next pruning, or when their time comes.
    var expiring = PrunedHeap<ExpiringMessage>()
    /// Each conversation's disappearing-message timer in seconds, as its last
    /// `DisappearingTimerEvent` set it (none: off); messages sent in it carry it (Router+Expiry.swift).
    var disappearingTimers: [ConversationKey: UInt32] = [:]
    var stats = RelayStats()
    private var toFlush: [Session] = []
    let allocator = ByteBufferAllocator()
    let wireDecoder: WireDecoder
    /// `Frame{message{direction: SENT}}` and `{direction: RECEIVED}`: appended to a message for its
    /// sender's other devices and for everyone else.
    let sentSuffix: [UInt8]
    let receivedSuffix: [UInt8]
    /// `Frame{message{direction: RECEIVED, is_offline: true}}`: appended to a message a receiver's
    /// device reads from its stream (a stream sync), not live.
    let receivedOfflineSuffix: [UInt8]

    init(
        eventLoop: any EventLoop,
        configuration: RelayConfiguration,
        store: StoreQueue,
        state: StoredState,
        authenticator: RelayAuthenticator,
        metrics: RelayMetrics
    ) {
        self.eventLoop = eventLoop
        self.configuration = configuration
        self.store = store
        self.authenticator = authenticator
        self.metrics = metrics
        self.logger = configuration.logger
        self.wireDecoder = configuration.codec.makeWireDecoder()
        liveUpdateBudgets = RateBudgets(
            perSecond: configuration.liveUpdateRate,
            burstSeconds: Self.liveUpdateBurstSeconds
        )
        fanOutBudgets = RateBudgets(perSecond: configuration.fanOutRate, burstSeconds: Self.fanOutBurstSeconds)
        keyFetchBudgets = RateBudgets(perMinute: configuration.keyFetchRate)
        joinBudgets = RateBudgets(perMinute: configuration.joinRate)
        peerBudgets = RateBudgets(perSecond: configuration.peerRate, burstSeconds: Self.peerBurstSeconds)
        loginBudgets = RateBudgets(perMinute: configuration.loginRate)
        self.sentSuffix = Frame.with { $0.payload = .message(Message.with { $0.direction = .sent }) }.serializedBytes()
        self.receivedSuffix = Frame.with { $0.payload = .message(Message.with { $0.direction = .received }) }
            .serializedBytes()
        self.receivedOfflineSuffix = Frame.with {
            $0.payload = .message(
                Message.with {
                    $0.direction = .received; $0.isOffline = true
                }
            )
        }.serializedBytes()
        conversations = state.conversations
        for (key, conversation) in state.conversations {
            for (seq, expireAtMs) in conversation.expiries {
                // Erased by a sweep before this start, which also changed the conversation list (or
                // recalled, which took it out of the list): removed, and not swept again.
                if conversation.kept[seq]?.size == 0 || conversation.removed.contains(seq) {
                    conversations[key]!.removed.insert(seq)
                    continue
                }
                expiring.insert(ExpiringMessage(expireAtMs: expireAtMs, conversation: key, seq: seq), isLive: isDue)
            }
        }
        streams = state.streams
        lastEventID = state.lastEventID
        devicePositions = state.devicePositions
        for stored in state.keyBundles {
            guard let bundle = try? KeyBundle(serializedBytes: stored.bytes) else { continue }
            keyBundles[stored.device.user, default: [:]][stored.device.device, default: [:]][bundle.kind] = bundle
        }
        let later = loadRecords(state.records)
        loadKnownDevices()
        // Only of devices the relay keeps: a forgotten device's events are still in its user's
        // stream, but it is a new device when it comes back (Router+Devices.swift). Each window as
        // the relay committed it with the events (the client's bytes of what is kept rewritten,
        // whatever retention or a redaction did to the kept frames since); rebuilt from the kept
        // copies only for a device whose store holds no such record (written before it).
        for (device, digests) in later.windows where knownDevices[device.user]?[device.device] != nil {
            var recent = RecentEvents()
            for digest in digests { recent.insert(digest: digest) }
            recentEvents[device] = recent
        }
        for (device, frames) in state.recentEvents
        where knownDevices[device.user]?[device.device] != nil && recentEvents[device] == nil {
            var recent = RecentEvents()
            for frame in frames {
                recent.insert(frame)
                for key in resendKeys(ofKept: frame, user: device.user) { recent.insert(key) }
            }
            recentEvents[device] = recent
        }
        members = state.members
        for (key, users) in members {
            for user in users { belongs[user, default: []].insert(key) }
        }
        for key in conversations.keys {
            if case .direct(let a, let b) = key {
                belongs[a, default: []].insert(key)
                belongs[b, default: []].insert(key)
            }
        }
        applyGroupsFile(namedBefore: later.fileGroups)
        findEmptyGroups()
        countDirectConversations()
        store.onFailure = { [unowned self] reason in
            self.logger.critical("fatal: \(reason)")
            self.closeAll()
            // A shutdown under way ends with the connections: its steps went with the failed job.
            if let promise = self.shutdownPromise {
                self.shutdownPromise = nil
                EventLoopFuture.andAllComplete(
                    self.connections.values.map(\.connection.closeFuture),
                    on: self.eventLoop
                )
                .cascade(to: promise)
            }
            self.onFatal(reason)
        }
        store.willCommit = { [unowned self] batch in self.writeChangedWindows(into: &batch) }
    }

    /// Checks every `interval` that the store is still this relay's (``RelayStore/checkConnection()``,
    /// on the store thread, in order with the commits): a relay that lost its PostgreSQL connection,
    /// and with it the database's lock (a standby may serve the database by then), stops, rather
    /// than serve from memory what it can no longer commit.
    func checkStoreConnection(every interval: TimeAmount) {
        repeatedly(every: interval) { router in router.store.read({ try $0.checkConnection() }, then: { _ in }) }
    }

    /// Runs `body` on the router's loop every `interval`, the first time after `initialDelay`
    /// (default: `interval`), until the relay shuts down or its store fails.
    func repeatedly(every interval: TimeAmount, initialDelay: TimeAmount? = nil, _ body: @escaping (Router) -> Void) {
        let bound = NIOLoopBound((router: self, body: body), eventLoop: eventLoop)
        eventLoop.scheduleRepeatedTask(initialDelay: initialDelay ?? interval, delay: interval) { task in
            let (router, body) = bound.value
            guard !router.shuttingDown, !router.store.failed else {
                task.cancel()
                return
            }
            body(router)
        }
    }

    // MARK: Connections

    /// A new connection: counted, logged, and closed unless it logs in within
    /// ``RelayConfiguration/loginTimeout``.
    func opened(_ session: Session) {
        connections[ObjectIdentifier(session)] = session
        stats.connectionsAccepted += 1
        stats.connectionsOpen += 1
        metrics.connectionOpened(session.transport)
        logger.info("accepted \(session.label)")
        let bound = NIOLoopBound((router: self, session: session), eventLoop: eventLoop)
        session.loginTimer = eventLoop.scheduleTask(in: configuration.loginTimeout) {
            let (router, session) = bound.value
            guard session.userID == nil else { return }
            router.fail(session, code: "loginTimeout", reason: "no login frame in time")
        }
    }

    func closed(_ session: Session) {
        guard connections.removeValue(forKey: ObjectIdentifier(session)) != nil else { return }
        stats.connectionsOpen -= 1
        metrics.connectionClosed(session.transport)
        stats.peakInboundBufferedBytes = max(stats.peakInboundBufferedBytes, session.decoderStats.peakBufferedBytes)
        unregister(session)
        session.expiry?.cancel()
        session.loginTimer?.cancel()
        session.loginTimer = nil
        logger.info("closed \(session.label)")
        if session.wentOffline, let user = session.userID, sessions[user] == nil {
            // Told here, once the connection is gone, whatever closed it (error, logout, the peer).
            broadcastPresence(of: user)
            flush()
        }
    }

    /// Removes `session` from the routing table; its user is offline when it was its last session
    /// (subscribers are told when the connection has closed).
    func unregister(_ session: Session) {
        guard let user = session.userID, var list = sessions[user],
            let index = list.firstIndex(where: { $0 === session })
        else { return }
        list.remove(at: index)
        sessions[user] = list.isEmpty ? nil : list
        let nowMs = RelayProtocol.nowMs()
        if list.isEmpty {
            stats.usersOnline -= 1
            metrics.usersOnline.decrement()
            lastOnlineMs[user] = nowMs
        }
        session.wentOffline = true
        // Not once the relay stops (a graceful shutdown, a failed store): nothing more is committed.
        if !shuttingDown, !store.failed { noteSeen(DeviceKey(user: user, device: session.deviceID), atMs: nowMs) }
    }

    func snapshot() -> RelayStats {
        var copy = stats
        for session in connections.values {
            copy.peakInboundBufferedBytes = max(copy.peakInboundBufferedBytes, session.decoderStats.peakBufferedBytes)
        }
        copy.storeCommits = store.commits
        return copy
    }

    /// Closes every connection at once (the store failed: nothing more can be acknowledged).
    private func closeAll() {
        for session in connections.values {
            session.connection.close(code: "internal", reason: "the relay's store failed; the relay stops", after: nil)
        }
    }

    /// Set when a graceful shutdown begins. Frames read after it are not acted on: nothing about
    /// them is acknowledged, so their senders send them again to the relay they reconnect to.
    private(set) var shuttingDown = false

    /// Completed once a graceful shutdown has closed every connection (``shutDown()``); taken by
    /// whichever ends it: its last step, or a store that fails first (the failed job's steps do not
    /// run, so that step would never come, and `RelayServer.shutdown()` waited forever).
    private var shutdownPromise: EventLoopPromise<Void>?

    /// A graceful shutdown (SIGTERM, ``RelayServer/shutdown()``): stops acting on what arrives and,
    /// once everything already accepted is committed and its acks and forwards are written, tells
    /// every logged-in device `kicked_offline` (`KICK_REASON_SERVER_SHUTDOWN`; a WebSocket peer also
    /// gets close code 1001) and closes every connection.
    /// - Returns: A future that completes when every connection is closed (a peer that does not
    ///   read is closed after a second).
    func shutDown() -> EventLoopFuture<Void> {
        if let underway = shutdownPromise { return underway.futureResult }
        shuttingDown = true
        let promise = eventLoop.makePromise(of: Void.self)
        shutdownPromise = promise
        if store.failed {
            finishShutdown()
        } else {
            // The devices online now were seen now: the order a later start forgets devices in
            // (Router+Devices.swift) counts them as last seen, not as seen at their login.
            for session in connections.values where session.state == .loggedIn {
                // Not one that logged out or whose token expired: it was seen when it went.
                guard let user = session.userID, sessions[user]?.contains(where: { $0 === session }) == true else {
                    continue
                }
                noteSeen(DeviceKey(user: user, device: session.deviceID))
            }
            // Behind every answer queued so far: the kick closes the sessions. (A store that fails
            // meanwhile drops this step; its failure ends the shutdown, store.onFailure.)
            store.afterAnswers { self.finishShutdown() }
        }
        return promise.futureResult
    }

    /// Kicks every session and completes the shutdown's promise once their connections closed (not
    /// when a failed store took it first).
    private func finishShutdown() {
        guard let promise = shutdownPromise else { return }
        shutdownPromise = nil
        let closed = connections.values.map(\.connection.closeFuture)
        kickAllForShutdown()
        EventLoopFuture.andAllComplete(closed, on: eventLoop).cascade(to: promise)
    }

    private func kickAllForShutdown() {
        for session in Array(connections.values) where !session.closing {
            session.closing = true
            guard session.state == .loggedIn else {
                session.connection.close(code: "serverShutdown", reason: "the relay is shutting down", after: nil)
                continue
            }
            let kicked = RelayProtocol.kickedFrame(
                .serverShutdown,
                "the relay is shutting down; log in again to resume"
            )
            closeAfterWriting(kicked, session, code: "serverShutdown", reason: "the relay is shutting down")
        }
    }

    /// Closes `session` after telling it why (where the socket still takes bytes): with `last`
    /// when given, else with an error notice carrying `code` and `reason`.
    func fail(_ session: Session, code: String, reason: String, last: Frame? = nil) {
        guard !session.closing else { return }
        session.closing = true
        stats.closedByError[code, default: 0] += 1
        metrics.closedByError(code: code)
        logger.notice("closing \(session.label): \(code): \(reason)")
        unregister(session)
        closeAfterWriting(
            last ?? RelayProtocol.errorFrame(code: code, reason: reason),
            session,
            code: code,
            reason: reason
        )
    }

    /// Writes `frame`, flushes, and closes `session` (announcing `code` to a WebSocket peer).
    func closeAfterWriting(_ frame: Frame, _ session: Session, code: String, reason: String) {
        guard session.connection.isActive else {
            session.connection.close(code: code, reason: reason, after: nil)
            return
        }
        var buffer = allocator.buffer(capacity: 128)
        buffer.writeFrame(frame)
        metrics.frameOut(frame.payload?.kind, session.transport)
        session.connection.close(code: code, reason: reason, after: buffer)
    }

    /// Closes `session` for an error raised in its pipeline (decoder, deadline, ...).
    func fail(_ session: Session, error: any Error) {
        guard let (code, reason) = RelayProtocol.closeReason(for: error, closing: session.closing) else { return }
        fail(session, code: code, reason: reason)
    }

    /// Drops a client whose queued output passed ``RelayConfiguration/maxOutboundBytes``: it stops
    /// receiving at once and is closed as soon as the current event is handled.
    func slowConsumer(_ session: Session) {
        guard !session.closing, !session.connection.isWritable else { return }
        dropSlowConsumer(session)
    }

    /// Drops `session` as a slow consumer (``slowConsumer(_:)``), its output held or queued.
    private func dropSlowConsumer(_ session: Session) {
        session.closing = true
        session.heldOutput = nil
        stats.closedByError["slowConsumer", default: 0] += 1
        metrics.closedByError(code: "slowConsumer")
        metrics.slowConsumer(session.transport)
        if let pending = session.connection.bufferedBytes {
            stats.peakOutboundBufferedBytes = max(stats.peakOutboundBufferedBytes, pending)
        }
        logger.warning(
            "closing \(session.label): slowConsumer: more than \(configuration.maxOutboundBytes) bytes queued"
        )
        unregister(session)
        let connection = NIOLoopBound(session.connection, eventLoop: eventLoop)
        let reason = "more than \(configuration.maxOutboundBytes) bytes queued"
        eventLoop.execute { connection.value.close(code: "slowConsumer", reason: reason, after: nil) }
    }

    // MARK: Writing

    /// Queues `buffer`, a frame of `kind`, for `session` (flushed by ``flush()``).
    func write(_ buffer: ByteBuffer, kind: Frame.Payload.Kind?, to session: Session) {
        guard !session.closing else { return }
        if session.heldOutput != nil {
            session.heldOutput?.append(buffer, kind: kind)
            // Bounded as what the connection queues is, and counted with it.
            let held = session.heldOutput?.bytes ?? 0
            stats.peakOutboundBufferedBytes = max(stats.peakOutboundBufferedBytes, held)
            if held > configuration.maxOutboundBytes { dropSlowConsumer(session) }
            return
        }
        session.connection.write(buffer)
        metrics.frameOut(kind, session.transport)
        if !session.needsFlush {
            session.needsFlush = true
            toFlush.append(session)
        }
        if !session.connection.isWritable {
            // Past the high-water mark: nothing more is queued for this client.
            slowConsumer(session)
        }
    }

    func write(_ frame: Frame, to session: Session) {
        var buffer = allocator.buffer(capacity: 64)
        buffer.writeFrame(frame)
        write(buffer, kind: frame.payload?.kind, to: session)
    }

    /// Writes `frame` to `session` once everything queued before it is committed.
    func answer(_ frame: Frame, to session: Session) {
        store.afterCommit {
            self.write(frame, to: session)
            self.flush()
        }
    }

    /// Flushes every connection written to since the last flush.
    func flush() {
        for session in toFlush {
            session.needsFlush = false
            guard !session.closing else { continue }
            if let pending = session.connection.bufferedBytes, pending > stats.peakOutboundBufferedBytes {
                stats.peakOutboundBufferedBytes = pending
            }
            session.connection.flush()
        }
        toFlush.removeAll(keepingCapacity: true)
    }

    func notice(_ session: Session, code: String, reason: String) {
        answer(RelayProtocol.errorFrame(code: code, reason: reason), to: session)
    }

    /// Answers `requestID` with a request result (error_code 0: success).
    func result(_ session: Session, _ requestID: UInt64, _ code: Int32 = 0, _ description: String = "") {
        answer(
            RelayProtocol.answer(
                .requestResult(
                    RequestResult.with {
                        $0.errorCode = code
                        $0.errorDescription = RelayProtocol.described(description)
                        $0.serverTimeMs = RelayProtocol.nowMs()
                    }
                ),
                requestID: requestID
            ),
            to: session
        )
    }

    /// Refuses a frame: with a request result when it carries a request id, else with an error notice.
    func refuse(_ session: Session, _ requestID: UInt64, _ code: Int32, notice: String, _ reason: String) {
        if requestID != 0 {
            result(session, requestID, code, "\(notice): \(reason)")
        } else {
            self.notice(session, code: notice, reason: reason)
        }
    }

    /// Runs a store read that `session`'s request `requestID` needs, then `then` with its rows on
    /// the loop (``StoreQueue/read(_:then:)``), or refuses the request with 3013 when the session
    /// has ``Session/maxReadsInFlight`` reads waiting already: with `busy` (the request's own
    /// answer, with that code and reason) when it has one, else a request result or notice.
    func read<T>(
        for session: Session,
        requestID: UInt64,
        busy: ((_ code: Int32, _ reason: String) -> Void)? = nil,
        _ work: @escaping (any RelayStore) throws -> T,
        then: @escaping (T) -> Void
    ) {
        guard session.readsInFlight < Session.maxReadsInFlight else {
            let reason =
                "busy: \(Session.maxReadsInFlight) requests of this session wait for the store: ask again once one is "
                + "answered"
            if let busy { return busy(RelayProtocol.RequestError.busy, reason) }
            return refuse(session, requestID, RelayProtocol.RequestError.busy, notice: "busy", reason)
        }
        session.readsInFlight += 1
        store.read(work) { rows in
            session.readsInFlight -= 1
            then(rows)
        }
    }

    // MARK: Routing

    func handle(_ frame: InboundFrame, from session: Session) {
        guard !session.closing, !shuttingDown else { return }
        session.lastHeardMs = configuration.silenceClock()
        switch session.state {
        case .new:
            login(frame, session)
            return
        case .authenticating:
            // Held until the token is checked, which may wait (logins share jwt-kit's key
            // collection, an actor): at most 256 frames, and together at most one frame's size
            // limit. Before, only the count was bounded: 256 frames at the size limit, 256 MiB,
            // held for a connection that had shown nothing but a token.
            let bytes = session.held.reduce(frame.record.readableBytes) { $0 + $1.record.readableBytes }
            guard session.held.count < RelayProtocol.maxFramesDuringLogin,
                session.held.isEmpty || bytes <= configuration.codec.effectiveMaxFrameSize
            else {
                fail(
                    session,
                    code: "tooManyFrames",
                    reason: "more than \(RelayProtocol.maxFramesDuringLogin) frames, or more than "
                        + "\(configuration.codec.effectiveMaxFrameSize) bytes of frames, before the login was answered"
                )
                return
            }
            // A copy: a frame is a slice of its read buffer, which it would keep alive (256 frames
            // sent in 256 reads kept up to 256 reads' buffers, though they were counted as a few bytes).
            session.held.append(frame.ownStorage())
            return
        case .loggedIn:
            break
        }
        guard let user = session.userID else { return }
        switch frame.payloadKind {
        case .message?:
            routeMessage(frame, from: session, user: user)
        case .recall?, .edit?, .delete?, .typing?, .reaction?, .pin?, .pollVote?, .pollUpdate?, .disappearingTimer?,
            .markRead?, .call?, .streamChunk?:
            guard deliverable(frame, from: session) else { return }
            routeEvent(frame, from: session, user: user)
        case .conversationUpdate?, .receiveOption?, .blocklistChange?:
            guard deliverable(frame, from: session) else { return }
            changeOwnState(frame, from: session, user: user)
        case .extensionUpdate?:
            guard deliverable(frame, from: session) else { return }
            updateExtension(frame, from: session, user: user)
        case .receipt?, .receipts?:
            guard deliverable(frame, from: session) else { return }
            routeReceipts(frame, from: session, user: user)
        case .systemNotice?:
            routeNotice(frame, from: session, user: user)
        case .loginRequest?, .ping?, .logout?, .maxSeqRequest?, .syncRequest?, .presence?, .presenceSubscription?,
            .membership?, .streamSyncRequest?, .streamAck?, .keyPublish?, .keyFetchRequest?, .conversationListRequest?,
            .extensionFetchRequest?, .blocklistRequest?, .historyRequest?, .readReceiptRequest?,
            .groupReadMembersRequest?:
            request(frame, from: session, user: user)
        case let kind:
            let requestID = decoded(frame, session)?.requestID ?? 0
            guard !session.closing else { return }
            refuse(
                session,
                requestID,
                RelayProtocol.RequestError.unsupported,
                notice: "unsupported",
                "the relay does not route \(kind?.protoName ?? "empty") frames"
            )
        }
    }

    /// The bytes of what one answer carries (a history or sync page's messages, a list page's
    /// entries, a login result's max seqs, a blocklist, key bundles): the frame size limit less 512
    /// bytes for the answer's own fields (request id, tags and lengths, cursors, the conversation).
    var answerRoom: Int { configuration.codec.effectiveMaxFrameSize - 512 }

    /// The first of `items` that fit `room` bytes, each taking `size` of them (its bytes in the
    /// answer, with its tag and length), and whether any was left out: what an answer that may leave
    /// some out holds (max seqs, a blocklist, key bundles).
    static func fitting<Item>(_ items: some Sequence<Item>, room: Int, size: (Item) -> Int) -> ([Item], Bool) {
        var left = room
        var fitting: [Item] = []
        for item in items {
            left -= size(item)
            guard left >= 0 else { return (fitting, true) }
            fitting.append(item)
        }
        return (fitting, false)
    }

    /// The most bytes a frame of conversation `key` may have for the relay to keep or forward it:
    /// the frame size limit less the delivery reserve
    /// (``RelayProtocol/deliveryReserve(targetID:channelID:)``). A one-to-one conversation is named by
    /// the other user's id on each side, so the longer of the two ids counts.
    func deliveryRoom(in key: ConversationKey) -> Int {
        let (target, channel) =
            switch key {
            case .direct(let a, let b): (a.utf8.count >= b.utf8.count ? a : b, "")
            case .shared(_, let target, let channel): (target, channel)
            }
        return configuration.codec.effectiveMaxFrameSize
            - RelayProtocol.deliveryReserve(targetID: target, channelID: channel)
    }

    /// ``deliveryRoom(in:)`` for `frame` from `sender`: its conversation's, or for a frame that names
    /// none the relay keeps, the room around the ids it names.
    func deliveryRoom(for frame: InboundFrame, sender: String) -> Int {
        if let key = ConversationKey(frame.conversationType, frame.targetID, channelID: frame.channelID, user: sender) {
            return deliveryRoom(in: key)
        }
        return configuration.codec.effectiveMaxFrameSize
            - RelayProtocol.deliveryReserve(targetID: frame.targetID, channelID: frame.channelID)
    }

    /// Whether a frame the relay keeps or forwards (an event, a receipt, a notice, a change of the
    /// user's own state) still fits the frame size limit with what the relay adds on delivery
    /// (``deliveryRoom(for:sender:)``, less `extra` bytes); refuses it with 3010 otherwise, before
    /// anything is applied.
    func deliverable(_ frame: InboundFrame, from session: Session, adding extra: Int = 0) -> Bool {
        let room = deliveryRoom(for: frame, sender: session.userID ?? "") - extra
        guard frame.body.readableBytes > room else { return true }
        guard let requestID = decoded(frame, session)?.requestID else { return false }
        refuse(
            session,
            requestID,
            RelayProtocol.RequestError.tooLargeToDeliver,
            notice: "tooLargeToDeliver",
            "the frame is \(frame.body.readableBytes) bytes; the relay keeps and forwards frames of at most \(room) "
                + "(the frame size limit, less what it adds on delivery)"
        )
        return false
    }

    func decoded(_ frame: InboundFrame, _ session: Session) -> Frame? {
        do {
            return try frame.decode(with: wireDecoder)
        } catch {
            fail(session, code: error.code.rawValue, reason: error.reason)
            return nil
        }
    }

    /// Whether `user` may read `key`: its own one-to-one conversations, the shared ones it is a member of.
    func isMember(_ user: String, _ key: ConversationKey) -> Bool {
        switch key {
        case .direct(let a, let b): return a == user || b == user
        case .shared: return members[key]?.contains(user) == true
        }
    }

    /// The users a conversation's frames reach: both sides of a one-to-one one, every member of a
    /// shared one.
    func users(of key: ConversationKey) -> [String] {
        switch key {
        case .direct(let a, let b): return a == b ? [a] : [a, b]
        case .shared: return members[key].map { Array($0) } ?? []
        }
    }

    // MARK: Streams

    /// The payloads the relay keeps rewritten (a reaction with its summaries, receipts with the
    /// relay's fields, an edit whose quote lost its text), so that a resend of the client's bytes is
    /// found by ``resendKeys(_:user:)``.
    static let rewrittenKinds: Set<Frame.Payload.Kind> = [.reaction, .receipt, .receipts, .edit]

    /// The keys an event of `user` is remembered by besides its bytes, the same for the client's
    /// frame and for the copy the relay rewrote and keeps (which is all a restart finds): a reaction's
    /// ``reactionKey(_:_:user:)``, each receipt's ``receiptKey(_:)``, an edit that quotes without what
    /// its quote may lose (``Redaction/quote(_:keepingAuthor:)``); none for another event. A resend is
    /// one whose keys are all remembered.
    static func resendKeys(_ event: Frame, user: String) -> [[UInt8]] {
        switch event.payload {
        case .reaction(let reaction)?: return [reactionKey(event, reaction, user: user)]
        case .receipt(let receipt)?: return [receiptKey(receipt)]
        case .receipts(let batch)?: return batch.receipts.map(receiptKey)
        case .edit(var edit)? where edit.newMessage?.quote != nil || edit.newMessage?.quoteSnapshot != nil:
            Redaction.quote(&edit.newMessage!, keepingAuthor: false)
            var key = event
            key.payload = .edit(edit)
            return [key.serializedBytes()]
        default: return []
        }
    }

    /// The ``resendKeys(_:user:)`` of a kept event frame (decoded only when it is rewritten).
    func resendKeys(ofKept bytes: [UInt8], user: String) -> [[UInt8]] {
        let rewritten = try? wireDecoder.withFrameView(bytes) { view in
            view.payloadKind.map(Self.rewrittenKinds.contains) ?? false
        }
        guard rewritten == true, let event = try? wireDecoder.decode(Frame.self, from: bytes) else { return [] }
        return Self.resendKeys(event, user: user)
    }

    /// Remembers that `device` sent an event with these bytes (or this resend key,
    /// ``resendKeys(_:user:)``): in its window, and its window in the store with the next commit
    /// (one record per device, ``StateRecordKey/sentEvents(_:)``), so that a start finds it again.
    ///
    /// The record (2 KiB when the window is full) is made once per commit and device, as the commit
    /// is handed to the store (``writeChangedWindows(into:)``), not once per event: a batch of
    /// receipts remembers each receipt and its keys.
    func remember(_ bytes: some Sequence<UInt8>, sentBy device: DeviceKey) {
        recentEvents[device, default: RecentEvents()].insert(bytes)
        // Holds the record's place (the batch is not empty, so the commit is scheduled) until
        // ``writeChangedWindows(into:)`` writes it.
        if changedWindows.insert(device).inserted { store.batch.records[.sentEvents(device)] = [] }
    }

    /// Writes the window of every device remembered since the last commit into `batch`, the commit
    /// being handed to the store (``StoreQueue/willCommit``); a device forgotten since has none:
    /// its record is deleted.
    func writeChangedWindows(into batch: inout StoreBatch) {
        for device in changedWindows {
            batch.records[.sentEvents(device)] = recentEvents[device].map { SeqListBytes.bytes($0.digests) } ?? []
        }
        changedWindows = []
    }

    /// Whether `frame` is an event `session` already sent and the relay kept (a resend after a lost
    /// answer): then it is answered as the first time (its request id, once everything before it is
    /// committed) and neither applied nor delivered again.
    func isResentEvent(_ frame: InboundFrame, from session: Session, user: String) -> Bool {
        let device = DeviceKey(user: user, device: session.deviceID)
        guard let recent = recentEvents[device] else { return false }
        var resent = recent.contains(frame.body.readableBytesView)
        var event: Frame?
        // An event the relay keeps rewritten is found by its keys (``resendKeys(_:user:)``).
        if !resent, let kind = frame.payloadKind, Self.rewrittenKinds.contains(kind) {
            event = decoded(frame, session)
            if let event {
                let keys = Self.resendKeys(event, user: user)
                resent = !keys.isEmpty && keys.allSatisfy { recent.contains($0) }
            }
        }
        guard resent else { return false }
        if let requestID = (event ?? decoded(frame, session))?.requestID, requestID != 0 { result(session, requestID) }
        return true
    }

    /// A kept frame for one user: its position in that user's stream, and whether it is a message
    /// that user sent.
    struct Delivery {
        var user: String
        var position: UInt64
        var sent: Bool
    }

    /// The origin of what the relay keeps on its own (no user logs in with an empty id): no
    /// stream entry it keeps counts as sent by a user or a device.
    static let relayOrigin = DeviceKey(user: "", device: "")

    /// What ``keep(_:for:origin:expireAtMs:about:)`` puts in streams.
    enum Kept {
        /// A kept message, by its conversation and seq.
        case message(ConversationKey, seq: UInt64)
        /// An event frame: kept once (``KeptEvent``), named by the entry of every user it reaches.
        case event([UInt8])
    }

    /// Gives a kept frame the next position of each of `users`' streams and adds the entries to the
    /// store's batch (dropping the oldest entries past ``RelayConfiguration/maxStreamEntries``).
    /// - Parameters:
    ///   - item: What the entries hold; a message is `sent` on `origin.user`'s stream.
    ///   - origin: The user and device that sent it: that device is not given it back.
    ///   - expireAtMs: When an event expires (``KeptEvent/expireAtMs``; 0: never).
    ///   - about: The message whose content an event carries (``KeptEvent/about``).
    func keep(
        _ item: Kept,
        for users: [String],
        origin: DeviceKey,
        expireAtMs: Int64 = 0,
        about: MessageKey? = nil
    ) -> [Delivery] {
        guard !users.isEmpty else { return [] }
        let entryItem: (_ sent: Bool) -> StreamItem
        switch item {
        case .message(let key, let seq):
            entryItem = { .message(key, seq: seq, sent: $0) }
        case .event(let frame):
            if users.contains(origin.user) { remember(frame, sentBy: origin) }
            lastEventID += 1
            let id = lastEventID
            store.batch.events.append(KeptEvent(id: id, frame: frame, expireAtMs: expireAtMs, about: about))
            entryItem = { _ in .event(id) }
        }
        var deliveries: [Delivery] = []
        deliveries.reserveCapacity(users.count)
        for user in users {
            var stream = streams[user, default: StreamState()]
            stream.head += 1
            let sent = user == origin.user
            store.batch.streamEntries.append(
                StreamEntry(
                    user: user,
                    position: stream.head,
                    originDevice: sent ? origin.device : nil,
                    item: entryItem(sent)
                )
            )
            if stream.count > configuration.maxStreamEntries {
                let oldest = stream.oldest
                stream.oldest = stream.head + 1 - UInt64(configuration.maxStreamEntries)
                StoreBatch.trim(oldest..<stream.oldest, of: user, in: &store.batch.trimmedStreams)
            }
            streams[user] = stream  // A small value: copied, not shared.
            deliveries.append(Delivery(user: user, position: stream.head, sent: sent))
        }
        return deliveries
    }

    /// The length-prefixed record of a frame `body` with `suffixes` appended (protobuf merges them in).
    func record(_ body: ByteBuffer, _ suffixes: [UInt8]...) -> ByteBuffer {
        let length = body.readableBytes + suffixes.reduce(0) { $0 + $1.count }
        var out = allocator.buffer(capacity: length + 5)
        out.writeLengthPrefix(length)
        out.writeImmutableBuffer(body)
        for suffix in suffixes { out.writeBytes(suffix) }
        return out
    }

    /// `Frame{stream_position: position}`: appended, after ``noRequestSuffix``, to every kept frame
    /// a device gets, live or by sync.
    static func positionSuffix(_ position: UInt64) -> [UInt8] {
        Frame.with { $0.streamPosition = position }.serializedBytes()
    }

    /// `Frame{request_id: 0}` written out (an encoder writes no zero, but a reader takes the last
    /// value of a scalar): a frame's request id is its sender's, matched against that device's own
    /// requests, so it reaches no other device. A receiver that kept it would take a message for the
    /// answer to one of its own requests. The sender's device gets the answer (ack or result) with it.
    static let noRequestSuffix: [UInt8] = [3 << 3, 0]

    /// Writes a kept frame `body` (of `kind`) to the live sessions of each delivery's user, but not to
    /// `origin` (the session that sent it). Messages get their direction for each user.
    ///
    /// A view-once message (`viewOnce`) goes without its content to a receiving device whose stream
    /// would serve it so: one whose floor, or acknowledged position, is at or past the message's
    /// position (a new device id that logged in, or a position acknowledged, while the message's
    /// commit ran). Before, a new device that logged in within that commit got the content.
    func deliver(
        _ body: ByteBuffer,
        kind: Frame.Payload.Kind?,
        to deliveries: [Delivery],
        except origin: Session?,
        viewOnce: Bool = false
    ) {
        let isMessage = kind == .message
        var stub: ByteBuffer?  // the view-once message without its content, made once
        for delivery in deliveries {
            guard let list = sessions[delivery.user] else { continue }
            var out: ByteBuffer?
            for session in list where session !== origin && session.live && !session.closing {
                if viewOnce, !delivery.sent,
                    delivery.position
                        <= viewedOncePosition(of: DeviceKey(user: delivery.user, device: session.deviceID))
                {
                    if stub == nil { stub = ByteBuffer(bytes: viewedOnce(Array(body.readableBytesView))) }
                    let position = Self.positionSuffix(delivery.position)
                    write(record(stub!, receivedSuffix, Self.noRequestSuffix, position), kind: kind, to: session)
                    stats.framesForwarded += 1
                    continue
                }
                if out == nil {
                    let position = Self.positionSuffix(delivery.position)
                    out =
                        isMessage
                        ? record(body, delivery.sent ? sentSuffix : receivedSuffix, Self.noRequestSuffix, position)
                        : record(body, Self.noRequestSuffix, position)
                }
                write(out!, kind: kind, to: session)
                stats.framesForwarded += 1
            }
        }
    }

    /// `Frame{request_id: 0, stream_position: 0}` written out (see ``noRequestSuffix``): appended to
    /// a frame that is not kept, so that neither the sender's request id nor a `stream_position` its
    /// sender wrote reaches a receiver, whose devices resume from it.
    static let noPositionSuffix: [UInt8] = noRequestSuffix + [4 << 3, 0]

    /// Writes a frame (of `kind`) that is not kept to the live sessions of `users`, but not to
    /// `origin`, with `suffix` (merged in) and ``noPositionSuffix``.
    func deliverLive(
        _ body: ByteBuffer,
        kind: Frame.Payload.Kind?,
        sender: String,
        to users: [String],
        except origin: Session?,
        suffix: [UInt8] = []
    ) {
        let isMessage = kind == .message
        var received: ByteBuffer?
        var sent: ByteBuffer?
        for user in users {
            for session in sessions[user] ?? [] where session !== origin && session.live && !session.closing {
                let out: ByteBuffer
                if !isMessage {
                    out = received ?? record(body, suffix, Self.noPositionSuffix)
                    received = out
                } else if user == sender {
                    out = sent ?? record(body, sentSuffix, suffix, Self.noPositionSuffix)
                    sent = out
                } else {
                    out = received ?? record(body, receivedSuffix, suffix, Self.noPositionSuffix)
                    received = out
                }
                write(out, kind: kind, to: session)
                stats.framesForwarded += 1
            }
        }
    }
}
#endif
