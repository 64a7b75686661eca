// The defences of the decode path (issue 4), one suite each:
//
//   depth      a 100,000-level nesting bomb is refused fast, by every entry point
//   memory     1 MiB adversarial inputs stay within the heap bound: the pre-scan's estimate of
//              protobuf-c's arena and of the Swift value is checked against maxDecodedMemory before
//              anything is allocated, and the estimate bounds what decoding really takes
//   UTF-8      invalid UTF-8 in a string field or map is refused, in bytes fields it is kept
//   mismatch   a known field with the wrong wire type is kept as an unknown field and written back
//              (Google's behaviour; protobuf-c 1.4.1 rejects the message)
//   values     -0.0, NaN payloads and embedded NULs survive binary and JSON round trips
//   threads    shared values and inputs decoded and encoded from many threads at once
//   fuzz       every input in Fuzz/FailCases passes the fuzz targets' checks again
import CIMCodecRuntime
import Dispatch
import Foundation
import IMCodec
import IMCodecTestSupport
import Testing

// MARK: - Helpers

private enum H {
    static func error(_ body: () throws -> Void) -> IMCodecError? {
        do {
            try body()
            return nil
        } catch let error as IMCodecError {
            return error
        } catch {
            return IMCodecError(code: IMCodecError.Code(rawValue: "not an IMCodecError"), reason: "\(error)")
        }
    }

    static func decodeError(_ bytes: [UInt8], options: DecodingOptions = DecodingOptions()) -> IMCodecError? {
        error { _ = try Frame(serializedBytes: bytes, options: options) }
    }

    static let limitLifted = DecodingOptions(
        maxInputSize: 64 << 20,
        maxFieldCount: Int.max,
        maxDecodedMemory: Int.max / 4
    )
}

/// Google's deterministic re-encoding of Frame bytes (Python protobuf, upb), or nil when python3
/// with google.protobuf or protoc is not installed.
private enum Google {
    static let script = """
        import sys
        from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
        fds = descriptor_pb2.FileDescriptorSet.FromString(open(sys.argv[1], 'rb').read())
        pool = descriptor_pool.DescriptorPool()
        for f in fds.file:
            pool.Add(f)
        desc = pool.FindMessageTypeByName('imcodec.v1.Frame')
        cls = message_factory.GetMessageClass(desc) if hasattr(message_factory, 'GetMessageClass') \\
            else message_factory.MessageFactory(pool).GetPrototype(desc)
        sys.stdout.buffer.write(cls.FromString(sys.stdin.buffer.read()).SerializeToString(deterministic=True))
        """

    static let descriptorSet: URL? = {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent(
            "imcodec-hardening-\(UUID().uuidString).pb"
        )
        let ok =
            (try? run(
                [
                    "protoc", "--include_imports", "--descriptor_set_out=\(out.path)", "-I",
                    Protoc.root.appendingPathComponent("Schemas").path,
                    "-I", "/usr/include", "imcodec/v1/frame.proto",
                ],
                input: []
            )) != nil
        return ok ? out : nil
    }()

    static func reencode(_ bytes: [UInt8]) -> [UInt8]? {
        guard let descriptorSet else { return nil }
        return try? run(["python3", "-c", script, descriptorSet.path], input: bytes)
    }

    static func run(_ arguments: [String], input: [UInt8]) throws -> [UInt8] {
        let (termination, output, _) = try ChildProcess.run("/usr/bin/env", arguments, input: input)
        guard termination == .exited(0) else { throw CocoaError(.fileReadUnknown) }
        return output
    }
}

// MARK: - Depth

@Suite("Hardening: nesting depth")
struct HardeningDepthTests {
    @Test("a 100,000-level nesting bomb is refused as tooDeep in well under a second, by every entry point")
    func bomb() throws {
        let bomb = Wire.nestingBomb(levels: 100_000)
        let clock = ContinuousClock()
        var errors: [IMCodecError?] = []
        let elapsed = clock.measure {
            errors.append(H.decodeError(bomb))
            errors.append(H.error { _ = try WireDecoder().decode(Frame.self, from: bomb) })
            errors.append(H.error { _ = try ProtoJSON.jsonString(fromBinary: bomb, messageType: "imcodec.v1.Frame") })
            var stream: [UInt8] = []
            Delimited.appendRecord(bomb, to: &stream)
            var reader = Delimited.Reader<Frame>(stream)
            errors.append(H.error { _ = try reader.next() })
        }
        for error in errors {
            #expect(error?.code == .tooDeep)
            // The bomb's levels take 4 or 5 bytes each, so the pre-scan stops within maxDepth + 1 of them.
            #expect(
                (error?.offset ?? .max) < 5 * (DecodingOptions().maxDepth + 1),
                "the pre-scan stops at level maxDepth + 1: \(String(describing: error))"
            )
        }
        do {
            try WireDecoder().withFrameView(bomb) { _ in }
            Issue.record("withFrameView decoded a nesting bomb")
        } catch let error as IMCodecError {
            #expect(error.code == .tooDeep)
        }
        #expect(elapsed < .seconds(1))
    }

    @Test("the JSON reader refuses a 100,000-level bomb too")
    func jsonBomb() throws {
        let levels = 33_334  // × 3 message levels
        var json = ""
        json.reserveCapacity(levels * 48)
        json += "{\"message\":"
        for _ in 0..<levels { json += "{\"elements\":[{\"merger\":{\"messages\":[" }
        json += "{}"
        for _ in 0..<levels { json += "]}}]}" }
        json += "}"
        let clock = ContinuousClock()
        var error: IMCodecError?
        let elapsed = clock.measure { error = H.error { _ = try Frame(jsonString: json) } }
        #expect(error?.code == .tooDeep || error?.code == .invalidJSON)
        #expect(elapsed < .seconds(2))
    }

    @Test("depth is counted per known sub-message only: 100,000 nested unknown fields are one opaque value")
    func unknownNesting() throws {
        var bytes: [UInt8] = []
        for _ in 0..<100_000 { bytes = Wire.field(99, bytes) }  // field 99 is unknown in Frame: never entered
        let frame = try Frame(serializedBytes: bytes)
        #expect(frame.unknownFields.bytes == bytes)
    }
}

// MARK: - Memory

@Suite("Hardening: bounded memory", .serialized)
struct HardeningMemoryTests {
    @Test(
        "1 MiB adversarial inputs are refused by the pre-scan's estimate, before anything is allocated",
        arguments: AdversarialInputs.names
    )
    func refusedBeforeAllocating(_ name: String) throws {
        let bytes = AdversarialInputs.input(name, size: 1 << 20)
        #expect(bytes.count > 1_000_000 && bytes.count <= 1 << 20)
        let clock = ContinuousClock()
        var error: IMCodecError?
        let elapsed = clock.measure { error = H.decodeError(bytes) }
        #expect(error?.code == .memoryLimitExceeded, "\(name): \(String(describing: error))")
        // The scan stops where the estimate passes the limit (16 × input + 1 MiB by default): the
        // arena is never created (WireCodec creates it from the estimate after the scan).
        #expect((error?.offset ?? .max) < bytes.count)
        #expect(elapsed < .seconds(2))

        // The same family, 64 KiB, with the limit lifted: the estimate shows the amplification
        // that was refused.
        let small = AdversarialInputs.input(name, size: 64 << 10)
        let (frame, accounting) = try DecodeProbe.decode(Frame.self, from: small, options: H.limitLifted)
        let estimate = accounting.estimatedArenaBytes + accounting.estimatedValueBytes
        #expect(estimate > 17 * small.count, "\(name): \(estimate) bytes estimated for \(small.count)")
        withExtendedLifetime(frame) {}
    }

    @Test(
        "the estimate bounds protobuf-c's arena exactly and the Swift value's heap",
        arguments: AdversarialInputs.names
    )
    func estimateBoundsTheHeap(_ name: String) throws {
        let bytes = AdversarialInputs.input(name, size: 64 << 10)
        // Measured in a child process that does nothing else (HeapProbe): only this decode's
        // allocations are counted, whatever other suites allocate meanwhile.
        let a = try HeapProbe.decode(bytes, options: H.limitLifted)
        #expect(a.result == "decoded", "\(name)")
        guard let valueHeap = a.heap else { return }
        if a.wrappedFields == 0 {
            #expect(a.arenaBytesUsed <= a.estimatedArenaBytes)
            // The arena is one block of the estimated size.
            #expect(a.arenaBytesReserved <= a.estimatedArenaBytes + 4096)
        }
        #expect(
            valueHeap <= a.estimatedValueBytes + 64 << 10,
            "\(name): the Swift value took \(valueHeap) bytes, estimate \(a.estimatedValueBytes)"
        )
    }

    @Test("a decode that is accepted stays within input + maxDecodedMemory: arena + value measured")
    func acceptedWithinBound() throws {
        // Inputs just under the default limit (16 × input + 1 MiB) with the highest amplification
        // the adversarial families reach, and realistic pages.
        let cases: [(String, [UInt8])] = [
            ("repeated 16-byte strings, 1 MiB", AdversarialInputs.repeatedStrings16(size: 1 << 20)),
            ("empty sub-messages, 24 KiB", Wire.field(32, Wire.repeated([0x12, 0x00], 12 << 10))),
            ("empty elements, 64 KiB", AdversarialInputs.frameMessage(Wire.repeated([0xA2, 0x01, 0x00], 21 << 10))),
            ("history page, 256 KiB", AdversarialInputs.historyPage(bytes: 256 << 10)),
            ("history page, 1 MiB", AdversarialInputs.historyPage(bytes: 1 << 20)),
        ]
        for (name, bytes) in cases {
            let limit = 16 * bytes.count + (1 << 20)
            // Measured in a child process that does nothing else (HeapProbe), as above.
            let a = try HeapProbe.decode(bytes, options: DecodingOptions())
            guard let valueHeap = a.heap, let peak = a.peak else { return }
            if a.result == "decoded" {
                #expect(a.estimatedArenaBytes + a.estimatedValueBytes <= limit, "\(name)")
                #expect(
                    a.arenaBytesReserved + valueHeap <= limit + 64 << 10,
                    "\(name): arena \(a.arenaBytesReserved) + value \(valueHeap) > \(limit)"
                )
                // Everything the decode allocated at once, transient buffers included.
                #expect(peak <= limit + 64 << 10, "\(name): peak heap \(peak) > \(limit)")
            } else {
                #expect(a.result == IMCodecError.Code.memoryLimitExceeded.rawValue, "\(name): \(a.result)")
            }
        }
        // Realistic traffic is accepted.
        #expect(H.decodeError(AdversarialInputs.historyPage(bytes: 1 << 20)) == nil)
    }

    @Test("the estimate holds for every valid fixture and for random messages, and is tight")
    func estimateOnValidInput() throws {
        var inputs: [[UInt8]] = []
        let valid = Protoc.root.appendingPathComponent("Fixtures/valid")
        for name in try FileManager.default.contentsOfDirectory(atPath: valid.path).sorted()
        where name.hasSuffix(".binpb") {
            inputs.append([UInt8](try Data(contentsOf: valid.appendingPathComponent(name))))
        }
        var random = RandomMessages(seed: 44)
        for _ in 0..<200 { inputs.append(Frame(.message(random.message(depth: 3))).serializedBytes()) }
        let bound = DecodeProbe.bound
        for name in AdversarialInputs.names { inputs.append(AdversarialInputs.input(name, size: 4 << 10)) }
        inputs.append(AdversarialInputs.repeatedStrings16(size: 4 << 10))
        for bytes in inputs {
            let (_, a) = try DecodeProbe.decode(Frame.self, from: bytes, options: H.limitLifted)
            // The bound that lets short inputs skip the estimate holds.
            #expect(a.estimatedArenaBytes + a.estimatedValueBytes <= bytes.count * bound.perByte + bound.fixed)
            if a.rewritten {
                // Rewritten input: the rewritten bytes' estimate (and the rewrite's buffers) bound the arena.
                #expect(a.arenaBytesUsed <= a.arenaCap)
            } else {
                #expect(a.arenaBytesUsed <= a.estimatedArenaBytes)
                #expect(a.estimatedArenaBytes <= a.arenaBytesUsed + a.arenaBytesUsed / 8 + 64, "a loose estimate")
            }
        }
    }

    @Test("maxDecodedMemory is honoured exactly: the estimate's total passes or fails at the boundary")
    func limitBoundary() throws {
        let bytes = AdversarialInputs.frameMessage(Wire.repeated([0x62, 0x00], 1_000))
        let (_, a) = try DecodeProbe.decode(Frame.self, from: bytes, options: H.limitLifted)
        let total = a.estimatedArenaBytes + a.estimatedValueBytes
        #expect(H.decodeError(bytes, options: DecodingOptions(maxDecodedMemory: total)) == nil)
        #expect(
            H.decodeError(bytes, options: DecodingOptions(maxDecodedMemory: total - 1))?.code == .memoryLimitExceeded
        )
    }
}

// MARK: - UTF-8

@Suite("Hardening: UTF-8")
struct HardeningUTF8Tests {
    static let bad: [[UInt8]] = [
        [0xC0, 0x80], [0xC1, 0xBF],  // overlong 2-byte
        [0xE0, 0x80, 0x80], [0xE0, 0x9F, 0xBF],  // overlong 3-byte
        [0xED, 0xA0, 0x80], [0xED, 0xBF, 0xBF],  // surrogates
        [0xF0, 0x80, 0x80, 0x80],  // overlong 4-byte
        [0xF4, 0x90, 0x80, 0x80], [0xF5, 0x80, 0x80, 0x80],  // above U+10FFFF
        [0x80], [0xBF], [0xFF], [0xFE],  // stray bytes
        [0xE4, 0xB8], [0xF0, 0x9F, 0x98],  // truncated
    ]

    @Test("invalid UTF-8 is refused in string fields at every level and in map keys and values, with its offset")
    func refused() throws {
        for bad in Self.bad {
            let prefix: [UInt8] = Array("ok ✓ ".utf8)
            let text = prefix + bad + Array(" tail".utf8)
            // Frame.message.elements.text.text, Frame.message.sender_id, a conversation's target id,
            // a map key and a map value, a repeated string.
            let inputs: [([UInt8], Int)] = [
                (Wire.field(10, Wire.field(20, Wire.field(1, Wire.field(1, text)))), 9),
                (Wire.field(10, Wire.field(5, text)), 4),
                (Wire.field(10, Wire.field(6, Wire.field(2, text))), 6),
                (Wire.field(10, Wire.field(16, Wire.field(1, text))), 7),
                (Wire.field(10, Wire.field(16, Wire.field(1, [0x6B]) + Wire.field(2, text))), 10),
                (Wire.field(10, Wire.field(12, Array("fine".utf8)) + Wire.field(12, text)), 10),
            ]
            for (bytes, payloadAt) in inputs {
                let error = H.decodeError(bytes)
                #expect(error?.code == .invalidUTF8, "\(bad)")
                #expect(error?.offset == payloadAt + prefix.count, "\(bad): \(String(describing: error))")
            }
            // The same bytes in a bytes field (custom element data, cloud custom data) are kept.
            let custom = Wire.field(10, Wire.field(20, Wire.field(2, Wire.field(1, text))))
            #expect(H.decodeError(custom) == nil)
            let cloud = try Frame(serializedBytes: Wire.field(10, Wire.field(15, text)))
            guard case .message(let message)? = cloud.payload else { Issue.record("no message"); continue }
            #expect(message.cloudCustomData == text)
        }
    }

    @Test("every valid code point boundary is accepted")
    func validBoundaries() throws {
        for scalar: UInt32 in [0, 0x7F, 0x80, 0x7FF, 0x800, 0xD7FF, 0xE000, 0xFFFD, 0xFFFF, 0x10000, 0x10FFFF] {
            let string = String(Character(Unicode.Scalar(scalar)!))
            let frame = Frame(.message(Message.with { $0.senderID = string + "x" }))
            #expect(try Frame(serializedBytes: frame.serializedBytes()).serializedBytes() == frame.serializedBytes())
        }
    }
}

// MARK: - Wire-type mismatch

@Suite("Hardening: wire-type mismatch kept as an unknown field")
struct HardeningMismatchTests {
    /// Frame.message { client_msg_id: "c-1", sender_id: "alice" }
    static let envelope = Wire.field(1, Array("c-1".utf8)) + Wire.field(5, Array("alice".utf8))

    @Test("a known field with each wrong wire type is kept with its number, wire type and bytes")
    func everyWireType() throws {
        // (field bytes, where) for Frame.schema_version (varint), Message.seq (varint),
        // LocationElement.longitude (fixed64), TextElement.text (string), Frame.message (message),
        // Message.custom_params (map), Message.target_receivers (repeated string),
        // AtInfo.at_all (bool), MessageElement.text (a oneof member).
        let wrongs: [[UInt8]] = [
            Wire.field(1, [1, 2, 3]), Wire.fixed64(1, 7), Wire.fixed32(1, 7), Wire.field(1, []),
        ]
        for wrong in wrongs {
            let bytes = Wire.uint(2, 1) + wrong
            let frame = try Frame(serializedBytes: bytes)
            #expect(frame.schemaVersion == 0)
            #expect(frame.minReaderVersion == 1)
            #expect(frame.unknownFields.bytes == wrong)
            #expect(frame.serializedBytes() == bytes, "written back as it came, after the known fields")
        }
        let nested: [([UInt8], (Message) -> UnknownFields)] = [
            (Wire.fixed64(3, 4021), { $0.unknownFields }),  // seq as fixed64
            (Wire.field(3, [0x01]), { $0.unknownFields }),  // seq length-delimited
            (Wire.uint(16, 5), { $0.unknownFields }),  // a map field as a varint
            (Wire.fixed32(12, 9), { $0.unknownFields }),  // a repeated string as fixed32
            (Wire.field(13, Wire.fixed64(2, 1)), { $0.at?.unknownFields ?? UnknownFields() }),  // bool as fixed64
            (
                Wire.field(20, Wire.fixed32(1, 0x6463_6261)),
                { $0.elements.first?.unknownFields ?? UnknownFields() }
            ),  // oneof member as fixed32
            (
                Wire.field(20, Wire.field(7, Wire.field(1, Array("here".utf8)) + Wire.uint(2, 2))),
                { message in
                    guard case .location(let l)? = message.elements.first?.content else { return UnknownFields() }
                    return l.unknownFields
                }
            ),  // double as a varint
        ]
        for (field, unknown) in nested {
            let bytes = Wire.field(10, Self.envelope + field)
            let frame = try Frame(serializedBytes: bytes)
            guard case .message(let message)? = frame.payload else { Issue.record("no message"); continue }
            #expect(message.clientMsgID == "c-1")
            #expect(message.senderID == "alice")
            let kept = unknown(message).bytes
            #expect(!kept.isEmpty && field.suffix(kept.count) == kept[...], "\(field): kept \(kept)")
            let again = try Frame(serializedBytes: frame.serializedBytes())
            #expect(again.serializedBytes() == frame.serializedBytes())
        }
        // A oneof member that arrives with the wrong wire type does not touch the oneof.
        // Text, then location as fixed32
        let element = Wire.field(1, Wire.field(1, Array("hi".utf8))) + Wire.fixed32(7, 1)
        let frame = try Frame(serializedBytes: Wire.field(10, Wire.field(20, element)))
        guard case .message(let message)? = frame.payload, case .text(let text)? = message.elements.first?.content
        else {
            Issue.record("the oneof lost its member")
            return
        }
        #expect(text.text == "hi")
        #expect(message.elements.first?.unknownFields.bytes == Wire.fixed32(7, 1))
    }

    @Test("re-encoding gives the bytes Google's parser and deterministic serializer give")
    func sameAsGoogle() throws {
        var inputs: [[UInt8]] = []
        let valid = Protoc.root.appendingPathComponent("Fixtures/valid")
        for name in try FileManager.default.contentsOfDirectory(atPath: valid.path).sorted()
        where name.hasSuffix(".binpb") && (name.hasPrefix("wire_type_mismatch") || name.hasPrefix("unknown_")) {
            inputs.append([UInt8](try Data(contentsOf: valid.appendingPathComponent(name))))
        }
        inputs.append(
            Wire.fixed32(1, 1) + Wire.uint(2, 2) + Wire.field(10, Self.envelope + Wire.fixed64(3, 9) + Wire.uint(4, 5))
        )
        // The wrapper's number itself
        inputs.append(Wire.field(536_870_911, [1, 2]) + Wire.uint(1, 1) + Wire.uint(536_870_911, 3))
        for bytes in inputs {
            let ours = try Frame(serializedBytes: bytes).serializedBytes()
            guard let google = Google.reencode(bytes) else { return }  // no python3 protobuf: nothing to compare
            #expect(ours == google, "\(bytes)")
        }
    }

    @Test("genuine fields numbered 2^29-1 (the wrapper's number) are kept byte for byte, at every wire type")
    func wrapperNumber() throws {
        let tail =
            Wire.field(536_870_911, [9, 9]) + Wire.uint(536_870_911, 1) + Wire.fixed32(536_870_911, 2)
            + Wire.fixed64(536_870_911, 3)
        let bytes = Wire.uint(1, 1) + Wire.field(10, Self.envelope + tail)
        let frame = try Frame(serializedBytes: bytes)
        guard case .message(let message)? = frame.payload else { Issue.record("no message"); return }
        #expect(message.unknownFields.bytes == tail)
        #expect(frame.serializedBytes() == bytes)
    }

    @Test("enclosing lengths are recomputed across the 1- to 2- and 2- to 3-byte varint boundaries, 100 levels deep")
    func lengthsRecomputed() throws {
        for padding in [110, 118, 119, 120, 121, 122, 126, 127, 16_360, 16_370, 16_377, 16_383] {
            // A sender id of `padding` bytes makes Frame.message's payload straddle a boundary once
            // the mismatch (2 bytes) is wrapped (+6 bytes).
            let message = Wire.field(5, Array(repeating: 0x61, count: padding)) + Wire.field(3, [])
            let bytes = Wire.field(10, message)
            let frame = try Frame(serializedBytes: bytes)
            guard case .message(let m)? = frame.payload else { Issue.record("no message"); continue }
            #expect(m.senderID.utf8.count == padding)
            #expect(m.unknownFields.bytes == Wire.field(3, []))
            #expect(frame.serializedBytes() == bytes)
        }
        // Nested to the depth limit, with a mismatch at the bottom and one at every 10th level.
        var bytes = Wire.field(1, Array("deep".utf8)) + Wire.fixed32(3, 1)  // a Message's client id and seq as fixed32
        for level in 0..<32 {  // Frame, Message, then 32 × (MessageElement, MergerElement, Message): 98 levels
            // Message ← MergerElement.messages ← MessageElement.merger ← Message.elements
            bytes = Wire.field(20, Wire.field(10, Wire.field(4, bytes) + (level % 3 == 0 ? Wire.uint(1, 5) : [])))
        }
        bytes = Wire.field(10, bytes)
        let frame = try Frame(serializedBytes: bytes)
        let again = try Frame(serializedBytes: frame.serializedBytes())
        #expect(again.serializedBytes() == frame.serializedBytes())
        if let google = Google.reencode(bytes) { #expect(frame.serializedBytes() == google) }
    }

    @Test("errors after a mismatch carry offsets into the original input")
    func offsetsInOriginalInput() throws {
        let bad: [UInt8] = [0xFF]
        let bytes = Wire.field(3, [1]) + Wire.field(10, Self.envelope + Wire.fixed64(3, 1) + Wire.field(22, bad))
        let error = H.decodeError(bytes)
        #expect(error?.code == .invalidUTF8)
        #expect(error?.offset == bytes.count - 1)
        // Refused by the estimate: the offset is where it passes the limit, in the original input.
        let many = Wire.repeated([0x0A, 0x00], 300_000)
        let tooBig = H.decodeError(many, options: DecodingOptions(maxDecodedMemory: 1 << 20))
        #expect(tooBig?.code == .memoryLimitExceeded)
        #expect((tooBig?.offset ?? .max) < many.count)
    }

    @Test("random frames with a mismatch added at the end of their message decode to the same frame plus that field")
    func randomFrames() throws {
        var random = RandomMessages(seed: 7)
        let mismatches: [[UInt8]] = [
            Wire.fixed32(3, 1), Wire.field(4, [1, 2]), Wire.fixed64(5, 3), Wire.uint(6, 1), Wire.uint(20, 2),
        ]
        for i in 0..<100 {
            var message = random.message(depth: 2)
            message.unknownFields = UnknownFields()
            let field = mismatches[i % mismatches.count]
            let bytes = Wire.uint(1, 1) + Wire.field(10, message.serializedBytes() + field)
            let frame = try Frame(serializedBytes: bytes)
            guard case .message(let decoded)? = frame.payload else { Issue.record("no message"); continue }
            #expect(decoded.unknownFields.bytes == field)
            var known = decoded
            known.unknownFields = UnknownFields()
            #expect(known.serializedBytes() == message.serializedBytes())
            #expect(frame.serializedBytes() == bytes)
        }
    }

    @Test("input without mismatches takes the fast path (no rewriting)")
    func fastPath() throws {
        let bytes = Frame(Samples.message(elements: [.text("hi")])).serializedBytes()
        let (_, accounting) = try DecodeProbe.decode(Frame.self, from: bytes)
        #expect(accounting.wrappedFields == 0)
        let (_, slow) = try DecodeProbe.decode(Frame.self, from: bytes + Wire.field(1, []))
        #expect(slow.wrappedFields == 1)
    }
}

// MARK: - Values

@Suite("Hardening: values that must survive")
struct HardeningValueTests {
    @Test("-0.0 survives binary and JSON round trips; NaN payloads and infinities survive binary ones")
    func negativeZero() throws {
        for value in [
            -0.0, .nan, -.nan, Double(bitPattern: 0x7FF0_0000_0000_0001), .infinity, -.infinity, .leastNonzeroMagnitude,
        ] {
            let frame = Frame(.message(Message.with { $0.elements = [.location(latitude: value, longitude: -0.0)] }))
            let bytes = frame.serializedBytes()
            let decoded = try Frame(serializedBytes: bytes)
            #expect(decoded.serializedBytes() == bytes)
            guard case .message(let m)? = decoded.payload, case .location(let l)? = m.elements.first?.content else {
                Issue.record("no location")
                continue
            }
            #expect(l.latitude.bitPattern == value.bitPattern)
            #expect(l.longitude.bitPattern == (-0.0).bitPattern)
            let json = try decoded.jsonString()
            let back = try Frame(jsonString: json)
            guard case .message(let m2)? = back.payload, case .location(let l2)? = m2.elements.first?.content else {
                Issue.record("no location after JSON")
                continue
            }
            #expect(l2.longitude.bitPattern == (-0.0).bitPattern, "\(json)")
            #expect(l2.latitude.isNaN == value.isNaN)
            if !value.isNaN { #expect(l2.latitude.bitPattern == value.bitPattern, "\(json)") }
        }
    }

    @Test("embedded NULs survive in strings and bytes, binary and JSON; in map strings they are refused (documented)")
    func nuls() throws {
        let text = "a\u{0}b\u{0}\u{0}"
        let frame = Frame(
            .message(
                Message.with {
                    $0.senderID = "\u{0}"
                    $0.elements = [.text(text), .custom([0, 0, 1, 0])]
                    $0.targetReceivers = ["\u{0}x", ""]
                }
            )
        )
        let bytes = frame.serializedBytes()
        let decoded = try Frame(serializedBytes: bytes)
        #expect(decoded == frame)
        #expect(decoded.serializedBytes() == bytes)
        #expect(try Frame(jsonString: decoded.jsonString()) == frame)
        // U+0000 in a map value is kept (map strings are bytes in the generated C).
        let map = Wire.field(10, Wire.field(16, Wire.field(1, Array("k".utf8)) + Wire.field(2, [0x61, 0x00])))
        #expect(try Frame(serializedBytes: map).payload == .message(Message.with { $0.customParams = ["k": "a\u{0}"] }))
    }

    @Test("documented differences from Google's parsers are what IMCodec does")
    func documentedDifferences() throws {
        // A singular sub-message twice: merged, as Google does (MergeTests has the details).
        #expect(H.decodeError(Wire.field(10, []) + Wire.field(10, [])) == nil)
        // Groups: refused as malformed.
        #expect(H.decodeError(Wire.tag(99, 3) + Wire.tag(99, 4))?.code == .malformed)
        // Nesting: at most 320 levels by default (upb and swift-protobuf allow 100), so that the 100
        // merger layers Tencent allows decode (DepthTests).
        #expect(H.decodeError(Wire.nestingBomb(levels: 320)) == nil)
        #expect(H.decodeError(Wire.nestingBomb(levels: 321))?.code == .tooDeep)
    }
}

// MARK: - Threads

@Suite("Hardening: threads")
struct HardeningThreadTests {
    @Test("shared values and inputs are decoded and encoded from many threads at once")
    func concurrentUse() throws {
        var random = RandomMessages(seed: 99)
        let frames: [Frame] =
            (0..<40).map { i in
                i % 4 == 0
                    ? Frame(
                        .historyResponse(HistoryResponse.with { $0.messages = [random.message(), random.message()] })
                    )
                    : Frame(.message(random.message()))
            } + [Frame(Samples.message(elements: Array(Samples.elements.values)))]
        let inputs = frames.map { $0.serializedBytes() }
        let mismatched = inputs.map { Wire.field(1, [1]) + $0 }  // the slow path too
        let json = try frames.map { try $0.jsonString() }
        let failures = Failures()
        DispatchQueue.concurrentPerform(iterations: 16) { worker in
            let decoder = WireDecoder()
            for round in 0..<20 {
                let i = (worker * 7 + round) % frames.count
                do {
                    if try Frame(serializedBytes: inputs[i]).serializedBytes() != inputs[i] {
                        failures.add("decode \(i)")
                    }
                    if frames[i].serializedBytes() != inputs[i] { failures.add("encode \(i)") }
                    if try decoder.decode(Frame.self, from: mismatched[i]).serializedBytes() != inputs[i]
                        + Wire.field(1, [1])
                    {
                        failures.add("slow path \(i)")
                    }
                    let kind = try decoder.withFrameView(inputs[i]) { $0.payloadKind }
                    if kind != frames[i].payload?.kind { failures.add("view \(i)") }
                    if try frames[i].jsonString() != json[i] { failures.add("json \(i)") }
                    if try Frame(jsonString: json[i]).serializedBytes() != inputs[i] {
                        failures.add("json decode \(i)")
                    }
                } catch {
                    failures.add("\(i): \(error)")
                }
            }
        }
        #expect(failures.all.isEmpty, "\(failures.all.prefix(5))")
    }

    private final class Failures: @unchecked Sendable {
        private let lock = NSLock()
        private var list: [String] = []
        func add(_ failure: String) { lock.withLock { list.append(failure) } }
        var all: [String] { lock.withLock { list } }
    }
}

// MARK: - Fuzz fail cases

@Suite("Hardening: Fuzz/FailCases replay")
struct HardeningFailCaseTests {
    static let targets = ["FuzzBinaryDecode", "FuzzJSONDecode", "FuzzTextFormatDecode", "FuzzDelimited"]

    static func cases(_ target: String) -> [URL] {
        let folder = Protoc.root.appendingPathComponent("Fuzz/FailCases/\(target)")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.filter { !$0.hasPrefix(".") && $0 != "README.md" }.sorted().map {
            folder.appendingPathComponent($0)
        }
    }

    @Test("every input that ever failed a fuzz target passes its checks", arguments: targets)
    func replay(_ target: String) throws {
        for file in Self.cases(target) {
            let bytes = [UInt8](try Data(contentsOf: file))
            let problem: String?
            switch target {
            case "FuzzBinaryDecode": problem = FuzzChecks.binaryDecode(bytes)
            case "FuzzJSONDecode": problem = FuzzChecks.jsonDecode(bytes)
            case "FuzzTextFormatDecode": problem = FuzzChecks.textFormatDecode(bytes)
            default: problem = FuzzChecks.delimited(bytes)
            }
            #expect(problem == nil, "\(target)/\(file.lastPathComponent): \(problem ?? "")")
        }
    }

    @Test("the checks pass on the fixtures (the fuzz seeds)")
    func seeds() throws {
        let valid = Protoc.root.appendingPathComponent("Fixtures/valid")
        var stream: [UInt8] = []
        for name in try FileManager.default.contentsOfDirectory(atPath: valid.path).sorted() {
            let bytes = [UInt8](try Data(contentsOf: valid.appendingPathComponent(name)))
            if name.hasSuffix(".binpb") {
                #expect(FuzzChecks.binaryDecode(bytes) == nil, "\(name)")
                Delimited.appendRecord(bytes, to: &stream)
            } else if name.hasSuffix(".json") && name != "manifest.json" {
                #expect(FuzzChecks.jsonDecode(bytes) == nil, "\(name)")
            } else if name.hasSuffix(".txtpb") {
                #expect(FuzzChecks.textFormatDecode(bytes) == nil, "\(name)")
            }
        }
        #expect(FuzzChecks.delimited(stream) == nil)
        #expect(FuzzChecks.delimited(stream + [0x05, 0x08]) == nil)  // a record cut short at the end
    }
}
