import CProtobufCBench
import Foundation
import IMCodec
import SwiftProtobuf
import SwiftProtobufSchemas

/// The corpus in every form the paths need, prepared before any timing.
final class Prepared: @unchecked Sendable {
    // Everything here is immutable after init (the C pointers are only read).
    let corpus: Corpus
    /// All frames in one buffer, for the C loops: pointers[i] points at lengths[i] bytes.
    let storage: UnsafeMutableRawBufferPointer
    let pointers: UnsafeMutableBufferPointer<UnsafePointer<UInt8>?>
    let lengths: UnsafeMutableBufferPointer<Int>
    /// protobuf-c's own unpacked frames (malloc allocator), for "protobuf-c pack".
    let unpacked: UnsafeMutableBufferPointer<UnsafeMutableRawPointer?>
    let packBuffer: UnsafeMutableRawBufferPointer
    /// Decoded Swift values, for the encode paths.
    let imcodecFrames: [Frame]
    let swiftProtobufFrames: [Imcodec_V1_Frame]
    /// The frames whose payload is a message (the only ones a server stamps), as their own corpus,
    /// and the server fields a relay would assign to each (uid as the relay makes it, seq, time).
    let messages: Corpus
    let stamps: [ServerStamp]
    /// `messages` stamped (the sender's bytes followed by the stamp), for the receiver's decode.
    let stampedMessages: Corpus

    init(_ corpus: Corpus) throws {
        self.corpus = corpus
        let total = corpus.frames.reduce(0) { $0 + ($1.count + 15) & ~15 }
        storage = .allocate(byteCount: max(total, 16), alignment: 16)
        pointers = .allocate(capacity: corpus.count)
        lengths = .allocate(capacity: corpus.count)
        var offset = 0
        for (i, frame) in corpus.frames.enumerated() {
            let base = storage.baseAddress! + offset
            frame.withUnsafeBytes { base.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            pointers[i] = UnsafePointer(base.assumingMemoryBound(to: UInt8.self))
            lengths[i] = frame.count
            offset += (frame.count + 15) & ~15
        }
        unpacked = .allocate(capacity: corpus.count)
        unpacked.initialize(repeating: nil)
        let failed = pbc_bench_unpack_all(pointers.baseAddress, lengths.baseAddress, corpus.count, unpacked.baseAddress)
        guard failed == 0 else { throw BenchError("protobuf-c could not unpack \(failed) frames of \(corpus.name)") }
        packBuffer = .allocate(byteCount: max(corpus.frames.map(\.count).max() ?? 0, 16), alignment: 16)

        let decoder = WireDecoder()
        imcodecFrames = try corpus.frames.map { try decoder.decode(Frame.self, from: $0) }
        swiftProtobufFrames = try corpus.frames.map { try Imcodec_V1_Frame(serializedBytes: $0) }

        let messageFrames = zip(corpus.frames, imcodecFrames).filter { $1.payload?.kind == .message }.map(\.0)
        let messages = Corpus(name: corpus.name + " messages", frames: messageFrames, mix: [])
        let stamps = messageFrames.indices.map { n in
            ServerStamp(
                serverMsgUID: "5eb3c0de-\(n + 1)",
                seq: UInt64(n + 1),
                serverTimeMs: 1_763_000_000_000 + Int64(n)
            )
        }
        self.messages = messages
        self.stamps = stamps
        stampedMessages = Corpus(
            name: corpus.name + " messages, stamped",
            frames: try zip(messageFrames, stamps).map { try $1.applied(to: $0, decoder: decoder) },
            mix: []
        )
    }

    deinit {
        pbc_bench_free_all(unpacked.baseAddress, corpus.count)
        unpacked.deallocate()
        packBuffer.deallocate()
        pointers.deallocate()
        lengths.deallocate()
        storage.deallocate()
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// One pass over the corpus for each measured path. Each returns a checksum of what it read.
enum Paths {
    // MARK: raw protobuf-c (the loops are in C: Sources/CProtobufCBench)

    static func protobufCUnpack(_ p: Prepared) -> UInt64 {
        var sum: UInt64 = 0
        let failures = pbc_bench_unpack(p.pointers.baseAddress, p.lengths.baseAddress, p.corpus.count, 1, &sum)
        precondition(failures == 0)
        return sum
    }

    static func protobufCUnpackArena(_ p: Prepared, arena: UnsafeMutableRawPointer) -> UInt64 {
        var sum: UInt64 = 0
        let failures = pbc_bench_unpack_arena(
            arena,
            p.pointers.baseAddress,
            p.lengths.baseAddress,
            p.corpus.count,
            1,
            &sum
        )
        precondition(failures == 0)
        return sum
    }

    static func protobufCPack(_ p: Prepared) -> UInt64 {
        var sum: UInt64 = 0
        let mismatches = pbc_bench_pack(
            p.unpacked.baseAddress,
            p.lengths.baseAddress,
            p.corpus.count,
            1,
            p.packBuffer.baseAddress!.assumingMemoryBound(to: UInt8.self),
            p.packBuffer.count,
            &sum
        )
        precondition(mismatches == 0)
        return sum
    }

    // MARK: IMCodec

    /// The routing fast path as a router uses it: kind, conversation, target, sender, ids, seq,
    /// flags and element kinds, the ids read as bytes (FrameView's with...Bytes accessors: what a
    /// router keys its tables by; no String, no allocation).
    @inline(__always)
    static func route(_ view: borrowing FrameView) -> UInt64 {
        var h = UInt64(view.payloadKind?.rawValue ?? 0)
        h &+= UInt64(bitPattern: Int64(view.conversationType.rawValue)) &* 3
        h &+= view.withTargetIDBytes { UInt64($0.count) &* 31 &+ UInt64($0.first ?? 0) }
        h &+= view.withSenderIDBytes { UInt64($0.count) &* 5 &+ UInt64($0.last ?? 0) }
        h &+= view.withClientMsgIDBytes { UInt64($0.count) &* 7 &+ UInt64($0.first ?? 0) }
        h &+= view.withServerMsgUIDBytes { UInt64($0.count) &* 11 &+ UInt64($0.first ?? 0) }
        h &+= view.seq
        h &+= UInt64(view.messageFlags.rawValue) &* 13
        let n = view.elementCount
        h &+= UInt64(n)
        for i in 0..<n { h &+= UInt64(view.elementKind(at: i)?.rawValue ?? 0) &* 17 }
        return h
    }

    /// The same facts with the sender and message ids made into Strings (FrameView's String
    /// accessors): shows what the Strings cost.
    @inline(__always)
    static func routeWithStrings(_ view: borrowing FrameView) -> UInt64 {
        var h = UInt64(view.payloadKind?.rawValue ?? 0)
        h &+= UInt64(bitPattern: Int64(view.conversationType.rawValue)) &* 3
        h &+= view.withTargetIDBytes { UInt64($0.count) &* 31 &+ UInt64($0.first ?? 0) }
        h &+= UInt64(view.senderID.utf8.count) &* 5
        h &+= UInt64(view.clientMsgID.utf8.count) &* 7
        h &+= UInt64(view.serverMsgUID.utf8.count) &* 11
        h &+= view.seq
        h &+= UInt64(view.messageFlags.rawValue) &* 13
        let n = view.elementCount
        h &+= UInt64(n)
        for i in 0..<n { h &+= UInt64(view.elementKind(at: i)?.rawValue ?? 0) &* 17 }
        return h
    }

    static func imcodecRoute(_ p: Prepared, _ decoder: WireDecoder) -> UInt64 {
        var sum: UInt64 = 0
        for frame in p.corpus.frames {
            sum &+= try! decoder.withFrameView(frame) { route($0) }
        }
        return sum
    }

    static func imcodecRouteWithStrings(_ p: Prepared, _ decoder: WireDecoder) -> UInt64 {
        var sum: UInt64 = 0
        for frame in p.corpus.frames {
            sum &+= try! decoder.withFrameView(frame) { routeWithStrings($0) }
        }
        return sum
    }

    /// Full decode to Swift values with a reusable WireDecoder, reading every field.
    static func imcodecDecode(_ p: Prepared, _ decoder: WireDecoder) -> UInt64 {
        var d = Digest()
        for frame in p.corpus.frames {
            let value = try! decoder.decode(Frame.self, from: frame)
            value.digest(into: &d)
        }
        return d.value
    }

    /// Every field read through the generated views in place (`WireDecoder.withView`), with the
    /// coverage of the decode rows (DigestIMCodecView.swift): no Swift value is built.
    static func imcodecViewReadAll(_ p: Prepared, _ decoder: WireDecoder) -> UInt64 {
        var d = Digest()
        for frame in p.corpus.frames {
            try! decoder.withView(Frame.self, frame) { $0.digest(into: &d) }
        }
        return d.value
    }

    /// Full decode with the one-shot initializer (a new arena per call), reading every field.
    static func imcodecDecodeOneShot(_ p: Prepared) -> UInt64 {
        var d = Digest()
        for frame in p.corpus.frames {
            let value = try! Frame(serializedBytes: frame)
            value.digest(into: &d)
        }
        return d.value
    }

    static func imcodecEncode(_ p: Prepared) -> UInt64 {
        var sum: UInt64 = 0
        for frame in p.imcodecFrames {
            let bytes = frame.serializedBytes()
            sum &+= UInt64(bytes.count) &+ UInt64(bytes[0])
        }
        return sum
    }

    /// A reusable WireEncoder, returning a new array per message (like serializedBytes()).
    static func imcodecWireEncoderArray(_ p: Prepared, _ encoder: WireEncoder) -> UInt64 {
        var sum: UInt64 = 0
        for frame in p.imcodecFrames {
            let bytes = encoder.encode(frame)
            sum &+= UInt64(bytes.count) &+ UInt64(bytes[0])
        }
        return sum
    }

    /// A reusable WireEncoder lending its buffer (what a server writing to a socket would use).
    static func imcodecWireEncoderLent(_ p: Prepared, _ encoder: WireEncoder) -> UInt64 {
        var sum: UInt64 = 0
        for frame in p.imcodecFrames {
            sum &+= encoder.withEncoded(frame) { UInt64($0.count) &+ UInt64($0[0]) }
        }
        return sum
    }

    /// Server stamping as a relay does it: each message frame's bytes checked (every limit, the
    /// payload kind) and returned with the server's fields appended, in a new array.
    static func imcodecStamp(_ p: Prepared, _ decoder: WireDecoder) -> UInt64 {
        var sum: UInt64 = 0
        for (frame, stamp) in zip(p.messages.frames, p.stamps) {
            let bytes = try! stamp.applied(to: frame, decoder: decoder)
            sum &+= UInt64(bytes.count) &+ UInt64(bytes[bytes.count - 1])
        }
        return sum
    }

    /// The alternative stamping replaces: decode each message frame to Swift values, set the
    /// server's fields, encode it again.
    static func imcodecDecodeModifyEncode(_ p: Prepared, _ decoder: WireDecoder) -> UInt64 {
        var sum: UInt64 = 0
        for (frame, stamp) in zip(p.messages.frames, p.stamps) {
            var value = try! decoder.decode(Frame.self, from: frame)
            try! stamp.apply(to: &value)
            let bytes = value.serializedBytes()
            sum &+= UInt64(bytes.count) &+ UInt64(bytes[bytes.count - 1])
        }
        return sum
    }

    /// Full decode of `frames` (reading every field), for the receiver's side of stamping.
    static func imcodecDecode(_ frames: [[UInt8]], _ decoder: WireDecoder) -> UInt64 {
        var d = Digest()
        for frame in frames {
            let value = try! decoder.decode(Frame.self, from: frame)
            value.digest(into: &d)
        }
        return d.value
    }

    // MARK: swift-protobuf

    static func swiftProtobufDecode(_ p: Prepared) -> UInt64 {
        var d = Digest()
        for frame in p.corpus.frames {
            let value = try! Imcodec_V1_Frame(serializedBytes: frame)
            value.digest(into: &d)
        }
        return d.value
    }

    static func swiftProtobufEncode(_ p: Prepared) -> UInt64 {
        var sum: UInt64 = 0
        for frame in p.swiftProtobufFrames {
            let bytes: [UInt8] = try! frame.serializedBytes()
            sum &+= UInt64(bytes.count) &+ UInt64(bytes[0])
        }
        return sum
    }

    // MARK: Checks

    /// Checks, before timing, that every path sees the same frames: IMCodec and swift-protobuf
    /// decode to the same digest, IMCodec re-encodes every frame byte for byte, swift-protobuf and
    /// protobuf-c re-encode to the same sizes, and the routing view agrees with the full decode.
    static func check(_ p: Prepared) throws -> String {
        let decoder = WireDecoder()
        var mismatchedDigests = 0
        var notCanonical = 0
        var swiftProtobufSizes = 0
        var routeMismatches = 0
        var viewDigests = 0
        for (i, bytes) in p.corpus.frames.enumerated() {
            var a = Digest()
            var b = Digest()
            p.imcodecFrames[i].digest(into: &a)
            p.swiftProtobufFrames[i].digest(into: &b)
            if a.value != b.value { mismatchedDigests += 1 }
            var c = Digest()
            try decoder.withView(Frame.self, bytes) { $0.digest(into: &c) }
            if c.value != a.value { viewDigests += 1 }
            if p.imcodecFrames[i].serializedBytes() != bytes { notCanonical += 1 }
            let size = try (p.swiftProtobufFrames[i].serializedBytes() as [UInt8]).count
            if size != bytes.count { swiftProtobufSizes += 1 }
            let frame = p.imcodecFrames[i]
            let agrees = try decoder.withFrameView(bytes) { view -> Bool in
                guard view.payloadKind == frame.payload?.kind else { return false }
                if case .message(let m)? = frame.payload {
                    return view.senderID == m.senderID && view.clientMsgID == m.clientMsgID
                        && view.serverMsgUID == m.serverMsgUID && view.seq == m.seq
                        && view.messageFlags.rawValue == m.flags
                        && view.targetID == (m.conversation?.targetID ?? "")
                        && view.conversationType == (m.conversation?.type ?? .unspecified)
                        && view.elementCount == m.elements.count
                        && (0..<m.elements.count).allSatisfy {
                            view.elementKind(at: $0) == m.elements[$0].content?.kind
                        }
                }
                return true
            }
            if !agrees { routeMismatches += 1 }
        }
        // Stamping: the stamped bytes decode to what decode + modify + encode makes, and that is
        // their canonical re-encoding.
        var stampMismatches = 0
        for (i, frame) in p.messages.frames.enumerated() {
            var value = try decoder.decode(Frame.self, from: frame)
            try p.stamps[i].apply(to: &value)
            let stamped = try decoder.decode(Frame.self, from: p.stampedMessages.frames[i])
            if stamped != value || stamped.serializedBytes() != value.serializedBytes() { stampMismatches += 1 }
        }
        var sum: UInt64 = 0
        let packMismatches = pbc_bench_pack(
            p.unpacked.baseAddress,
            p.lengths.baseAddress,
            p.corpus.count,
            1,
            p.packBuffer.baseAddress!.assumingMemoryBound(to: UInt8.self),
            p.packBuffer.count,
            &sum
        )
        let problems = [
            (mismatchedDigests, "frames where IMCodec and swift-protobuf decode differently"),
            (viewDigests, "frames whose views read otherwise than the decoded value"),
            (notCanonical, "frames IMCodec does not re-encode byte for byte"),
            (swiftProtobufSizes, "frames swift-protobuf re-encodes to another size"),
            (packMismatches, "frames protobuf-c re-encodes to another size"),
            (routeMismatches, "frames whose FrameView disagrees with the decoded value"),
            (stampMismatches, "message frames whose stamped bytes decode otherwise than decode + modify + encode"),
        ].filter { $0.0 != 0 }
        if !problems.isEmpty {
            throw BenchError("\(p.corpus.name): " + problems.map { "\($0.0) \($0.1)" }.joined(separator: "; "))
        }
        return "\(p.corpus.name): all \(p.corpus.count) frames decode to the same values in IMCodec and swift-protobuf "
            + "(and read the same through IMCodec's views), "
            + "re-encode to the same bytes (IMCodec) and sizes (swift-protobuf, protobuf-c), and route consistently; "
            + "its \(p.messages.count) message frames, stamped, decode to what decode + modify + encode makes"
    }
}
