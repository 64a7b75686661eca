#if Tools
import Foundation
import IMCodec
import IMCodecNIO
import NIOCore

extension Router {
    /// Closes a connection whose first frame is not a good login, with a failed login result.
    func refuseLogin(_ session: Session, requestID: UInt64, code: Int32, reason: String) {
        metrics.loginFailed(code: code)
        let answer = RelayProtocol.answer(
            .loginResult(
                LoginResult.with {
                    $0.errorCode = code
                    $0.errorDescription = "notLoggedIn: \(reason)"
                    $0.serverTimeMs = RelayProtocol.nowMs()
                }
            ),
            requestID: requestID
        )
        fail(session, code: "notLoggedIn", reason: reason, last: answer)
    }

    /// The first frame of a connection: a login request, whose token is checked off the loop.
    func login(_ frame: InboundFrame, _ session: Session) {
        guard frame.payloadKind == .loginRequest else {
            refuseLogin(
                session,
                requestID: 0,
                code: RelayProtocol.LoginError.notLoggedIn,
                reason: "the first frame must be a login_request"
            )
            return
        }
        guard let decoded = decoded(frame, session), case .loginRequest(let request)? = decoded.payload else { return }
        guard !request.userID.isEmpty, !request.token.isEmpty else {
            refuseLogin(
                session,
                requestID: decoded.requestID,
                code: RelayProtocol.LoginError.missingCredentials,
                reason: "a login_request needs a user_id and a token"
            )
            return
        }
        session.state = .authenticating
        let authenticator = self.authenticator
        let bound = NIOLoopBound((router: self, session: session), eventLoop: eventLoop)
        let loop = eventLoop
        let beforeCheck = configuration.beforeTokenCheck
        let verify: @Sendable () async -> Void = {
            await beforeCheck?()
            let expiry = await authenticator.verify(request.token, user: request.userID)
            loop.execute {
                bound.value.router.finishLogin(
                    request,
                    requestID: decoded.requestID,
                    expiry: expiry,
                    bound.value.session
                )
            }
        }
        // On the relay's own loop: a login never waits for threads of the shared concurrency pool.
        if #available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *) {
            Task(executorPreference: EventLoopTaskExecutor(loop), operation: verify)
        } else {
            Task(operation: verify)
        }
    }

    /// Logs `session` in once its token was checked (`expiry` is `nil` for a refused token), then
    /// handles the frames that arrived meanwhile.
    func finishLogin(_ request: LoginRequest, requestID: UInt64, expiry: Date?, _ session: Session) {
        // The connection may have closed while the token was checked: nothing to log in.
        // Nor once the relay stops (its connection is closed with the others).
        guard !session.closing, !shuttingDown, connections[ObjectIdentifier(session)] != nil else { return }
        guard let expiry, !RelayProtocol.holdsNUL(request.userID), !RelayProtocol.holdsNUL(request.deviceID) else {
            stats.loginsRefused += 1
            // One answer for every check, so that a refusal tells nothing about which one failed.
            refuseLogin(
                session,
                requestID: requestID,
                code: RelayProtocol.LoginError.refused,
                reason: "the credentials were refused"
            )
            return
        }
        let user = request.userID
        // No conversation with a longer user id could be named (ConversationKey), and the relay
        // keeps the id with everything it keeps for the user.
        guard RelayProtocol.fitsIDBound(user) else {
            stats.loginsRefused += 1
            refuseLogin(
                session,
                requestID: requestID,
                code: RelayProtocol.LoginError.userIDTooLong,
                reason: "a user_id holds at most \(RelayProtocol.maxIDBytes) bytes"
            )
            return
        }
        // Kept with everything the relay keeps per device (Router+Devices.swift), and repeated in
        // presence updates and kicks: any id up to the frame size limit made 16 devices of one user
        // hold 64 MiB at the default limit.
        guard RelayProtocol.fitsIDBound(request.deviceID) else {
            stats.loginsRefused += 1
            refuseLogin(
                session,
                requestID: requestID,
                code: RelayProtocol.LoginError.deviceIDTooLong,
                reason: "a device_id holds at most \(RelayProtocol.maxIDBytes) bytes"
            )
            return
        }
        // Swift's strings compare by canonical equivalence: only NFC ids tell users (and a user's
        // devices) apart byte for byte, as the token issuer does.
        guard RelayProtocol.isNormalized(user), RelayProtocol.isNormalized(request.deviceID) else {
            stats.loginsRefused += 1
            refuseLogin(
                session,
                requestID: requestID,
                code: RelayProtocol.LoginError.idNotNormalized,
                reason: "a user_id and a device_id must be in Unicode Normalization Form C (NFC)"
            )
            return
        }
        // Once the token passed (no one else spends the user's logins); taken once the device is
        // admitted (a login refused for its devices costs nothing).
        guard loginBudgets.covers(1, by: user, atMs: session.lastHeardMs) else {
            stats.loginsRefused += 1
            refuseLogin(
                session,
                requestID: requestID,
                code: RelayProtocol.LoginError.tooFrequent,
                reason: "tooFrequent: past the logins one user may make (\(configuration.loginRate) a minute, "
                    + "--login-rate); log in again later"
            )
            return
        }
        let device = DeviceKey(user: user, device: request.deviceID)
        guard admitDevice(device) else {
            stats.loginsRefused += 1
            refuseLogin(
                session,
                requestID: requestID,
                code: RelayProtocol.LoginError.tooManyDevices,
                reason: "the user has \(configuration.maxDevicesPerUser) devices or more, too few of them offline "
                    + "to make room: log one out first"
            )
            return
        }
        _ = loginBudgets.take(1, by: user, atMs: session.lastHeardMs)
        // The same device logged in again: the older connection goes (other devices stay online).
        for previous in sessions[user] ?? [] where previous.deviceID == request.deviceID {
            logger.info(
                "\(user) logged in again on device \"\(request.deviceID)\"; closing the older connection \(previous.label)"
            )
            unregister(previous)
            previous.closing = true
            let kicked = RelayProtocol.kickedFrame(
                .loggedInElsewhere,
                "\(user) logged in on another connection with the same device id",
                otherDeviceID: request.deviceID,
                otherPlatform: request.platform
            )
            closeAfterWriting(kicked, previous, code: "kickedOffline", reason: "logged in elsewhere")
        }
        session.state = .loggedIn
        session.loginTimer?.cancel()
        session.loginTimer = nil
        session.userID = user
        session.deviceID = request.deviceID
        session.platform = request.platform
        session.sessionID = ids.nextSessionID()
        session.live = !request.streamResume
        let firstDevice = sessions[user] == nil
        sessions[user, default: []].append(session)
        if firstDevice {
            stats.usersOnline += 1
            metrics.usersOnline.increment()
        }
        stats.logins += 1
        metrics.loggedIn(session.transport)
        scheduleExpiry(session, at: expiry)
        logger.info(
            "\(session.label) logged in (\(request.platform.protoName)\(request.streamResume ? ", resuming its stream" : ""))"
        )
        let stream = streams[user] ?? StreamState()
        noteLogin(of: device, streamHead: stream.head)
        var answer = LoginResult.with {
            $0.serverTimeMs = RelayProtocol.nowMs()
            $0.sessionID = session.sessionID
            $0.heartbeatIntervalS = configuration.heartbeatIntervalS
            $0.streamPosition = stream.head
            $0.resumePosition = request.streamPosition != 0 ? request.streamPosition : devicePositions[device] ?? 0
        }
        var named: [ConversationKey] = []
        var seen = Set<ConversationKey>()
        for last in request.lastSeen {
            guard let conversation = last.conversation, let key = ConversationKey(conversation, user: user),
                isMember(user, key), seen.insert(key).inserted
            else { continue }
            named.append(key)
        }
        (answer.maxSeqs, answer.maxSeqsTruncated) = fittingMaxSeqs(
            (named + mostRecentFirst(of: user, except: seen)).lazy.map { self.maxSeq($0, for: user) }
        )
        // Answered once what the answer counts (the stream head, the max seqs) is committed: a
        // relay that stopped before would give those positions and seqs to other frames, and a
        // client told them would take its gap for frames it has. What the session is sent until
        // then (the frames of that commit, answers to its held frames) waits behind the answer.
        session.heldOutput = HeldOutput()
        let result = RelayProtocol.answer(.loginResult(answer), requestID: requestID)
        store.afterCommit { self.answerLogin(result, to: session) }
        if firstDevice { broadcastPresence(of: user) }
        let held = session.held
        session.held = []
        for frame in held { handle(frame, from: session) }
        flush()
    }

    /// Writes the login's answer to `session`, then what was held behind it.
    private func answerLogin(_ result: Frame, to session: Session) {
        guard let held = session.heldOutput else { return }
        session.heldOutput = nil
        write(result, to: session)
        for frame in held.frames { write(frame.buffer, kind: frame.kind, to: session) }
        flush()
    }

    /// Kicks `session` with `KICK_REASON_TOKEN_EXPIRED` when its token expires.
    private func scheduleExpiry(_ session: Session, at expiry: Date) {
        let delay = max(0, expiry.timeIntervalSinceNow)
        let bound = NIOLoopBound((router: self, session: session), eventLoop: eventLoop)
        session.expiry = eventLoop.scheduleTask(in: .milliseconds(Int64(min(delay, 365 * 86_400) * 1000))) {
            let (router, session) = bound.value
            guard !session.closing else { return }
            router.logger.info("\(session.label): token expired")
            router.unregister(session)
            session.closing = true
            let kicked = RelayProtocol.kickedFrame(
                .tokenExpired,
                "the login token expired; log in again with a new one"
            )
            router.closeAfterWriting(kicked, session, code: "tokenExpired", reason: "the login token expired")
        }
    }

    func maxSeq(_ key: ConversationKey, for user: String) -> ConversationSeq {
        ConversationSeq.with {
            $0.conversation = key.conversation(for: user)
            $0.seq = conversations[key]?.maxSeq ?? 0
        }
    }

    /// The max seqs of `keys`, in order, as many as fit one answer (``answerRoom``), and whether any
    /// was left out. Without the bound, a user in enough conversations (a one-to-one conversation
    /// with everyone who ever wrote to it) had a login result past the frame size limit: its devices
    /// could not log in.
    func fittingMaxSeqs(_ seqs: some Sequence<ConversationSeq>) -> ([ConversationSeq], Bool) {
        // A tag and a length of at most 5 bytes around each.
        Self.fitting(seqs, room: answerRoom) { $0.serializedBytes().count + 6 }
    }

    /// The conversations `user` belongs to, not in `except`, the most recently changed for it first
    /// (its list entry's version; then by storage id).
    func mostRecentFirst(of user: String, except: Set<ConversationKey> = []) -> [ConversationKey] {
        let views = userConversations[user] ?? [:]
        return (belongs[user] ?? []).filter { !except.contains($0) }
            .map { (key: $0, version: views[$0]?.info.version ?? 0, id: $0.storageID) }
            .sorted { ($0.version, $1.id) > ($1.version, $0.id) }
            .map(\.key)
    }

    // MARK: Presence

    /// The presence of `user` now, as `watcher` may see it: a user who blocked the watcher shows
    /// it nothing (offline, last seen unknown: as WhatsApp hides "last seen" and "online" from a
    /// blocked contact, and without saying it blocked it). Its updates do not reach the watcher.
    func presence(of user: String, to watcher: String) -> PresenceUpdate {
        guard hasBlocked(user, watcher) else { return presence(of: user) }
        return PresenceUpdate.with {
            $0.userID = user
            $0.timeMs = RelayProtocol.nowMs()
            $0.status = .offline
        }
    }

    /// The presence of `user` now.
    private func presence(of user: String) -> PresenceUpdate {
        PresenceUpdate.with {
            $0.userID = user
            $0.timeMs = RelayProtocol.nowMs()
            if let session = sessions[user]?.last {
                $0.status = .online
                $0.deviceID = session.deviceID
                $0.platform = session.platform
            } else {
                $0.status = .offline
                $0.lastSeenMs = lastOnlineMs[user] ?? 0
            }
        }
    }

    /// Tells the online subscribers of `user` its presence now, but those it blocked.
    func broadcastPresence(of user: String) {
        guard let watchers = subscribers[user], !watchers.isEmpty else { return }
        let frame = Frame(.presence(presence(of: user)))
        for watcher in watchers where !hasBlocked(user, watcher) {
            for session in sessions[watcher] ?? [] { write(frame, to: session) }
        }
    }
}
#endif
