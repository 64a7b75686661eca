// The test oracles: what every input must satisfy, checked by the fuzz targets in Fuzz/ and by
// IMCodecTests. They are not part of the codec: only Tests/ and Fuzz/ depend on this target. The
// one thing they need from inside IMCodec, decoding with its memory accounting, is the
// DecodeProbe (Sources/IMCodec/CSeam/DecodeProbe.swift), which has `package` access: this
// package's targets see it, no client does.
import IMCodec

/// The properties every input must have, as checked by the fuzz targets (Fuzz/Sources/*) and by
/// HardeningTests when it replays Fuzz/FailCases. Each returns nil when they hold, else a
/// description of the first that does not.
public enum FuzzChecks {
    /// Options without limits, for decoding bytes this code made itself.
    static let unlimited = DecodingOptions(
        maxInputSize: Int.max,
        maxDepth: DecodingOptions.maxDepthCap,
        maxFieldCount: Int.max,
        maxDecodedMemory: Int.max / 4
    )

    /// Binary decoding of a Frame from arbitrary bytes:
    /// - every decoding path (Frame(serializedBytes:), WireDecoder, WireDecoder.withFrameView and withView,
    ///   ProtoJSON.jsonString(fromBinary:)) accepts the same inputs and fails with the same code and
    ///   offset;
    /// - what decodes re-encodes to bytes that decode again and re-encode identically (bytes are
    ///   compared, not values: NaN is not equal to itself);
    /// - the routing view (FrameView) reports what the full decode holds, and every field read
    ///   through the generated views gives the decoded frame;
    /// - the JSON printed from the bytes equals the JSON of the value, and parses back to itself;
    /// - the memory estimate bounds protobuf-c's arena, and `allocatedBytes` (when given: the
    ///   allocator's live bytes) shows the Swift value within the value estimate.
    public static func binaryDecode(_ bytes: [UInt8], allocatedBytes: (() -> Int)? = nil) -> String? {
        let frame: Frame
        do {
            frame = try Frame(serializedBytes: bytes)
        } catch {
            return sameError(error, bytes)
        }
        let encoded = frame.serializedBytes()
        return pathsAgree(bytes, frame, encoded) ?? reencodingIsStable(bytes, frame, encoded)
            ?? jsonRoundTrips(bytes, frame) ?? memoryWithinEstimate(bytes, encoded, allocatedBytes: allocatedBytes)
            ?? mergingEqualsDecoding(bytes, encoded)
    }

    /// Every decoding path decodes what Frame(serializedBytes:) decodes, to the same frame.
    private static func pathsAgree(_ bytes: [UInt8], _ frame: Frame, _ encoded: [UInt8]) -> String? {
        // Other decoding paths agree.
        let decoder = WireDecoder()
        guard let fromDecoder = try? decoder.decode(Frame.self, from: bytes) else {
            return "WireDecoder.decode rejects what Frame(serializedBytes:) decodes"
        }
        if fromDecoder.serializedBytes() != encoded { return "WireDecoder.decode decodes differently" }
        do {
            if let problem = try decoder.withFrameView(bytes, { view in routingDifference(view, frame) }) {
                return "FrameView: \(problem)"
            }
        } catch {
            return "withFrameView rejects what Frame(serializedBytes:) decodes: \(error)"
        }
        // Every field read through the generated views (materialize() reads each one through its
        // view's accessor) gives the decoded frame; the payload enum of views names the payload kind.
        do {
            let problem = try decoder.withView(Frame.self, bytes) { view -> String? in
                if view.payload?.kind != view.payloadKind { return "payload and payloadKind disagree" }
                if view.hasUnknownFields == frame.unknownFields.isEmpty { return "hasUnknownFields" }
                if view.materialize().serializedBytes() != encoded { return "materialize() gives another frame" }
                return nil
            }
            if let problem { return "Frame.View: \(problem)" }
        } catch {
            return "withView rejects what Frame(serializedBytes:) decodes: \(error)"
        }
        return nil
    }

    /// The canonical bytes decode and re-encode to themselves.
    private static func reencodingIsStable(_ bytes: [UInt8], _ frame: Frame, _ encoded: [UInt8]) -> String? {
        // Canonical re-encoding is stable.
        let again: Frame
        do {
            again = try Frame(serializedBytes: encoded, options: unlimited)
        } catch {
            return "the re-encoded bytes do not decode: \(error)"
        }
        if again.serializedBytes() != encoded { return "re-encoding the re-encoded frame gives other bytes" }
        if frame.unknownFields.bytes.count > bytes.count { return "more unknown-field bytes than input bytes" }
        return nil
    }

    private static func jsonRoundTrips(_ bytes: [UInt8], _ frame: Frame) -> String? {
        // JSON: printed from the bytes = printed from the value; it parses back to itself.
        do {
            let json = try frame.jsonString()
            let direct = try ProtoJSON.jsonString(fromBinary: bytes, messageType: Frame.protoMessageName)
            if direct != json { return "JSON printed from the bytes differs from the value's" }
            let parsed = try Frame(jsonString: json)
            if try parsed.jsonString() != json { return "JSON does not parse back to itself" }
        } catch {
            return "JSON of a decoded frame: \(error)"
        }
        return nil
    }

    private static func memoryWithinEstimate(
        _ bytes: [UInt8],
        _ encoded: [UInt8],
        allocatedBytes: (() -> Int)?
    ) -> String? {
        // Memory: the estimate bounds protobuf-c's arena (and never refuses with the limit lifted).
        do {
            let before = allocatedBytes?() ?? 0
            let (value, accounting) = try DecodeProbe.decode(Frame.self, from: bytes, options: unlimitedMemory)
            let after = allocatedBytes?() ?? 0
            // Rewritten input is estimated again (the rewritten bytes) before protobuf-c runs.
            let estimate = accounting.rewritten ? accounting.arenaCap : accounting.estimatedArenaBytes
            if accounting.arenaBytesUsed > estimate {
                return "protobuf-c used \(accounting.arenaBytesUsed) arena bytes, estimate \(estimate)"
            }
            let bound = DecodeProbe.bound
            if accounting.estimatedArenaBytes + accounting.estimatedValueBytes > bytes.count * bound.perByte
                + bound.fixed
            {
                return "the estimate passes the bound that lets short inputs skip it"
            }
            if value.serializedBytes() != encoded { return "decoding with the estimate gives another frame" }
            if let allocatedBytes, after - before > accounting.estimatedValueBytes + 512 {
                // Once more: the first decode may have filled the Swift runtime's caches.
                let before2 = allocatedBytes()
                let (value2, _) = try DecodeProbe.decode(Frame.self, from: bytes, options: unlimitedMemory)
                let after2 = allocatedBytes()
                if after2 - before2 > accounting.estimatedValueBytes + 512 {
                    return
                        "the Swift value took \(after2 - before2) heap bytes, estimate \(accounting.estimatedValueBytes)"
                }
                withExtendedLifetime(value2) {}
            }
            withExtendedLifetime(value) {}
        } catch {
            return "decoding with the memory limit lifted fails: \(error)"
        }
        return nil
    }

    private static func mergingEqualsDecoding(_ bytes: [UInt8], _ encoded: [UInt8]) -> String? {
        // Parsing is merging: split at a top-level field boundary the input picks, a + b decodes
        // to b merged into a's value.
        let boundaries = topLevelFieldBoundaries(bytes)
        if !boundaries.isEmpty {
            let split = boundaries[Int(bytes[bytes.count / 2]) % boundaries.count]
            if var merged = try? Frame(serializedBytes: bytes[..<split]) {
                do {
                    try merged.merge(serializedBytes: bytes[split...], options: unlimited)
                } catch {
                    return "merge(serializedBytes:) fails on the second part of bytes that decode: \(error)"
                }
                if merged.serializedBytes() != encoded { return "decode(a + b) differs from a merged with b" }
            }
        }
        return nil
    }

    /// Offsets where a top-level field starts, the first excepted (empty when the bytes are not a
    /// sequence of whole fields).
    private static func topLevelFieldBoundaries(_ bytes: [UInt8]) -> [Int] {
        Wire.fields(bytes)?.dropFirst().map(\.whole.lowerBound) ?? []
    }

    static let unlimitedMemory = DecodingOptions(maxDecodedMemory: Int.max / 4)

    /// The other decoding paths fail like Frame(serializedBytes:) did with `error`.
    private static func sameError(_ error: IMCodecError, _ bytes: [UInt8]) -> String? {
        func compare(_ path: String, _ other: IMCodecError) -> String? {
            other.code == error.code && other.offset == error.offset
                ? nil : "\(path) fails with \(other), Frame(serializedBytes:) with \(error)"
        }
        let decoder = WireDecoder()
        do {
            _ = try decoder.decode(Frame.self, from: bytes)
            return "WireDecoder.decode decodes what Frame(serializedBytes:) rejects: \(error)"
        } catch {
            if let problem = compare("WireDecoder.decode", error) { return problem }
        }
        do {
            try decoder.withFrameView(bytes) { _ in }
            return "withFrameView decodes what Frame(serializedBytes:) rejects: \(error)"
        } catch let other as IMCodecError {
            if let problem = compare("withFrameView", other) { return problem }
        } catch {
            return "withFrameView throws \(error)"
        }
        do {
            try decoder.withView(Frame.self, bytes) { _ in }
            return "withView decodes what Frame(serializedBytes:) rejects: \(error)"
        } catch let other as IMCodecError {
            if let problem = compare("withView", other) { return problem }
        } catch {
            return "withView throws \(error)"
        }
        do {
            _ = try ProtoJSON.jsonString(fromBinary: bytes, messageType: Frame.protoMessageName)
            return "ProtoJSON prints what Frame(serializedBytes:) rejects: \(error)"
        } catch {
            if let problem = compare("ProtoJSON.jsonString(fromBinary:)", error) { return problem }
        }
        do {
            _ = try DecodeProbe.decode(Frame.self, from: bytes)
            return "decoding with the estimate accepts what Frame(serializedBytes:) rejects: \(error)"
        } catch {
            if let problem = compare("decoding with the estimate", error) { return problem }
        }
        return nil
    }

    /// What the routing view says that the full decode does not.
    private static func routingDifference(_ view: borrowing FrameView, _ frame: Frame) -> String? {
        var message: Message?
        var conversation: Conversation?
        var clientMsgID = ""
        var serverMsgUID = ""
        var reference: MessageRef?
        switch frame.payload {
        case .message(let m)?:
            message = m
            conversation = m.conversation
            clientMsgID = m.clientMsgID
            serverMsgUID = m.serverMsgUID
        case .typing(let e)?: conversation = e.conversation
        case .markRead(let e)?: conversation = e.conversation
        case .sendAck(let e)?:
            conversation = e.conversation
            clientMsgID = e.clientMsgID
            serverMsgUID = e.serverMsgUID
        case .historyRequest(let e)?: conversation = e.conversation
        case .historyResponse(let e)?: conversation = e.conversation
        case .recall(let e)?: reference = e.message
        case .edit(let e)?: reference = e.message
        case .receipt(let e)?: reference = e.message
        case .groupReadMembers(let e)?: reference = e.message
        case .delete(let e)?: reference = e.messages.first
        case .groupReadMembersRequest(let e)?: reference = e.message
        case .reaction(let e)?: reference = e.message
        case .pollVote(let e)?: reference = e.pollMessage
        case .pollUpdate(let e)?: reference = e.pollMessage
        case .streamChunk(let e)?: reference = e.message
        case .extensionUpdate(let e)?: reference = e.message
        case .call(let e)?: conversation = e.conversation
        case .conversationUpdate(let e)?: conversation = e.conversation
        case .disappearingTimer(let e)?: conversation = e.conversation
        case .receiveOption(let e)?: conversation = e.conversation
        case .membership(let e)?: conversation = e.conversation
        case .syncRequest(let e)?: conversation = e.conversation
        case .syncResponse(let e)?: conversation = e.conversation
        default: break
        }
        if let reference { conversation = reference.conversation }
        // A pin names its conversation and the pinned message.
        if case .pin(let e)? = frame.payload {
            conversation = e.conversation
            reference = e.message
        }
        if view.schemaVersion != frame.schemaVersion { return "schemaVersion" }
        if view.minReaderVersion != frame.minReaderVersion { return "minReaderVersion" }
        if view.payloadKind != frame.payload?.kind { return "payloadKind" }
        if view.conversationType != (conversation?.type ?? .unspecified) { return "conversationType" }
        if view.targetID != (conversation?.targetID ?? "") { return "targetID" }
        if view.channelID != (conversation?.channelID ?? "") { return "channelID" }
        if view.conversation?.serializedBytes() != conversation?.serializedBytes() { return "conversation" }
        let targetBytes = view.withTargetIDBytes { Array($0) }
        if targetBytes != Array((conversation?.targetID ?? "").utf8) { return "withTargetIDBytes" }
        if view.senderID != (message?.senderID ?? "") { return "senderID" }
        if view.clientMsgID != clientMsgID { return "clientMsgID" }
        if view.serverMsgUID != serverMsgUID { return "serverMsgUID" }
        if view.seq != (message?.seq ?? 0) { return "seq" }
        if view.messageFlags != MessageFlags(rawValue: message?.flags ?? 0) { return "messageFlags" }
        let elements = message?.elements ?? []
        if view.elementCount != elements.count { return "elementCount" }
        for (i, element) in elements.enumerated() where view.elementKind(at: i) != element.content?.kind {
            return "elementKind(at: \(i))"
        }
        if view.elementKind(at: elements.count) != nil || view.elementKind(at: -1) != nil {
            return "elementKind out of range"
        }
        if view.referencedMessage?.serializedBytes() != reference?.serializedBytes() { return "referencedMessage" }
        if view.referencedSenderID != (reference?.senderID ?? "") { return "referencedSenderID" }
        if view.atUserCount != (message?.at?.userIDs.count ?? 0) { return "atUserCount" }
        if view.atAll != (message?.at?.atAll ?? false) { return "atAll" }
        if view.materialize().serializedBytes() != frame.serializedBytes() { return "materialize()" }
        return nil
    }

    /// proto3 JSON of a Frame from arbitrary text: what parses prints JSON that parses back to the
    /// same JSON and the same bytes; its binary form decodes to the same bytes and JSON; the
    /// run-time-typed entry points (ProtoJSON) agree.
    public static func jsonDecode(_ bytes: [UInt8]) -> String? {
        let text = String(decoding: bytes, as: UTF8.self)
        let frame: Frame
        do {
            frame = try Frame(jsonString: text)
        } catch {
            do {
                _ = try ProtoJSON.binary(fromJSON: text, messageType: Frame.protoMessageName)
                return "ProtoJSON.binary(fromJSON:) accepts what Frame(jsonString:) rejects: \(error)"
            } catch let other {
                return other.code == error.code && other.offset == error.offset
                    ? nil : "ProtoJSON.binary(fromJSON:) fails with \(other), Frame(jsonString:) with \(error)"
            }
        }
        let binary = frame.serializedBytes()
        do {
            if try ProtoJSON.binary(fromJSON: text, messageType: Frame.protoMessageName) != binary {
                return "ProtoJSON.binary(fromJSON:) gives other bytes"
            }
            let json = try frame.jsonString()
            let reparsed = try Frame(jsonString: json)
            if reparsed.serializedBytes() != binary { return "JSON → Frame → JSON → Frame changes the bytes" }
            if try reparsed.jsonString() != json { return "the printed JSON does not print back identically" }
            let decoded = try Frame(serializedBytes: binary, options: unlimited)
            if decoded.serializedBytes() != binary { return "binary round trip changes the bytes" }
            if try decoded.jsonString() != json { return "binary round trip changes the JSON" }
            if try ProtoJSON.jsonString(fromBinary: binary, messageType: Frame.protoMessageName, decoding: unlimited)
                != json
            {
                return "ProtoJSON.jsonString(fromBinary:) prints other JSON"
            }
            var pretty = JSONEncodingOptions()
            pretty.prettyPrinted = true
            pretty.asciiOnly = true
            if try Frame(jsonString: frame.jsonString(options: pretty)).serializedBytes() != binary {
                return "pretty, ASCII-only JSON parses to other bytes"
            }
        } catch {
            return "round trip of parsed JSON fails: \(error)"
        }
        return nil
    }

    /// Text format of a Frame from arbitrary text (Google's text format, as `protoc --decode`
    /// prints it):
    /// - what does not parse fails with one of the documented codes (invalidTextFormat,
    ///   invalidUTF8, tooLarge, tooDeep), never another;
    /// - what parses prints text that parses back to the same bytes and prints identically;
    /// - its binary form decodes to the same bytes and prints the same text;
    /// - its proto3 JSON parses back to the same bytes.
    public static func textFormatDecode(_ bytes: [UInt8]) -> String? {
        let text = String(decoding: bytes, as: UTF8.self)
        let frame: Frame
        do {
            frame = try Frame(textFormatString: text)
        } catch {
            let documented: [IMCodecError.Code] = [.invalidTextFormat, .invalidUTF8, .tooLarge, .tooDeep]
            return documented.contains(error.code)
                ? nil : "Frame(textFormatString:) fails with an undocumented code: \(error)"
        }
        let binary = frame.serializedBytes()
        // Text format reads frames of any schema version (TextFormatParser accepts newer frames, as
        // a debugging format should), so the binary and JSON decodes of its bytes must too.
        var ownBytes = unlimited
        ownBytes.acceptsNewerFrames = true
        var ownJSON = JSONDecodingOptions()
        ownJSON.acceptsNewerFrames = true
        ownJSON.maxInputSize = Int.max
        ownJSON.maxDepth = DecodingOptions.maxDepthCap
        var unlimitedText = TextFormatDecodingOptions()
        unlimitedText.maxInputSize = Int.max
        unlimitedText.maxDepth = DecodingOptions.maxDepthCap
        do {
            let printed = frame.textFormatString()
            let reparsed = try Frame(textFormatString: printed, options: unlimitedText)
            if reparsed.serializedBytes() != binary { return "text → Frame → text → Frame changes the bytes" }
            if reparsed.textFormatString() != printed { return "the printed text does not print back identically" }
            let decoded = try Frame(serializedBytes: binary, options: ownBytes)
            if decoded.serializedBytes() != binary { return "binary round trip changes the bytes" }
            if decoded.textFormatString() != printed { return "binary round trip changes the text" }
            if try Frame(jsonString: frame.jsonString(), options: ownJSON).serializedBytes() != binary {
                return "the JSON of the parsed text parses to other bytes"
            }
        } catch {
            return "round trip of parsed text fails: \(error)"
        }
        return nil
    }

    /// A delimited stream of Frames from arbitrary bytes: Delimited.Reader and RecordReader split it
    /// alike, make progress and stop; each record decodes as Frame(serializedBytes:) decodes it (with
    /// offsets moved to the stream); what was read serializes and reads back to the same bytes.
    public static func delimited(_ bytes: [UInt8]) -> String? {
        let options = DecodingOptions()
        var reader = Delimited.Reader<Frame>(bytes, options: options)
        var records = Delimited.RecordReader(bytes, maxLength: options.maxInputSize)
        var frames: [Frame] = []
        var steps = 0
        while true {
            steps += 1
            if steps > bytes.count + 1 { return "the reader does not stop" }
            let start = reader.offset
            if records.offset != start { return "Reader and RecordReader are at different offsets" }
            let range: Range<Int>?
            do {
                range = try records.next()
            } catch {
                do {
                    _ = try reader.next()
                    return "Reader reads a record that RecordReader rejects: \(error)"
                } catch let other {
                    return other.code == error.code && other.offset == error.offset
                        ? nil : "Reader fails with \(other), RecordReader with \(error)"
                }
            }
            guard let range else {
                do {
                    if try reader.next() != nil { return "Reader reads past the last record" }
                } catch {
                    return "Reader fails at the end: \(error)"
                }
                break
            }
            if range.lowerBound <= start {
                return "no progress at offset \(start)"
            }
            let expected = Result { () throws(IMCodecError) in
                try Frame(serializedBytes: bytes[range], options: options)
            }
            do {
                guard let frame = try reader.next() else { return "Reader ends before the last record" }
                guard case .success(let direct) = expected else { return "Reader decodes a record Frame rejects" }
                if direct.serializedBytes() != frame.serializedBytes() { return "Reader decodes a record differently" }
                frames.append(frame)
            } catch {
                guard case .failure(let direct) = expected else {
                    return "Reader rejects a record Frame decodes: \(error)"
                }
                if error.code != direct.code || error.offset != direct.offset.map({ $0 + range.lowerBound }) {
                    return "Reader reports \(error) for a record Frame rejects with \(direct)"
                }
                return nil
            }
            if reader.offset != range.upperBound { return "Reader is not at the end of the record it read" }
        }
        let written = Delimited.serialize(frames)
        var back = Delimited.Reader<Frame>(written, options: unlimited)
        var rewritten: [Frame] = []
        do {
            while let frame = try back.next() { rewritten.append(frame) }
        } catch {
            return "what was read does not read back: \(error)"
        }
        if Delimited.serialize(rewritten) != written { return "reading back what was written changes it" }
        return nil
    }
}
