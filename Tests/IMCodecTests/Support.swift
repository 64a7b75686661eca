import Foundation
import Testing
import IMCodec

/// Runs Google's protoc on Schemas/ (the independent encoder the tests compare against).
enum Protoc {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let schemas = root.appendingPathComponent("Schemas").path

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Runs protoc with `arguments`, feeding `input` on standard input; returns standard output.
    static func run(_ arguments: [String], input: [UInt8]) throws -> [UInt8] {
        let inputFile = FileManager.default.temporaryDirectory.appendingPathComponent("imcodec-test-\(UUID().uuidString)")
        try Data(input).write(to: inputFile)
        defer { try? FileManager.default.removeItem(at: inputFile) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["protoc", "-I", schemas, "-I", "/usr/include"] + arguments
        process.standardInput = try FileHandle(forReadingFrom: inputFile)
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let errorText = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(description: "protoc \(arguments.joined(separator: " ")) failed: \(errorText)")
        }
        return [UInt8](data)
    }

    /// What Google's deterministic serializer writes for the message `bytes` encode: protoc decodes
    /// them to text format and encodes that text again.
    static func reencode(_ bytes: [UInt8], type: String = "imcodec.v1.Frame") throws -> [UInt8] {
        let text = try run(["--decode=\(type)", "imcodec/v1/frame.proto"], input: bytes)
        return try encode(text: text, type: type)
    }

    /// protoc --decode of wire bytes: the text format Google's C++ printer writes.
    static func decode(_ bytes: [UInt8], type: String = "imcodec.v1.Frame") throws -> String {
        String(decoding: try run(["--decode=\(type)", "imcodec/v1/frame.proto"], input: bytes), as: UTF8.self)
    }

    /// protoc --encode --deterministic_output of text format.
    static func encode(text: [UInt8], type: String = "imcodec.v1.Frame") throws -> [UInt8] {
        try run(["--encode=\(type)", "--deterministic_output", "imcodec/v1/frame.proto"], input: text)
    }
}

/// SplitMix64: a small, seeded, reproducible generator.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Seeded random messages: chains of every element kind, nested mergers, maps, unknown enum
/// numbers, edge strings (empty, CJK, emoji, embedded NUL, long), extreme numbers.
struct RandomMessages {
    var rng: SeededGenerator

    init(seed: UInt64) { rng = SeededGenerator(seed: seed) }

    mutating func chance(_ percent: Int) -> Bool { Int.random(in: 0..<100, using: &rng) < percent }

    mutating func string(allowNUL: Bool = true) -> String {
        switch Int.random(in: 0..<9, using: &rng) {
        case 0: return ""
        case 1: return "user_\(Int.random(in: 0..<100_000, using: &rng))"
        case 2: return "你好，世界"
        case 3: return "🚀🙂👨‍👩‍👧"
        case 4: return allowNUL ? "nul\u{0}inside" : "no nul"
        case 5: return String(repeating: "long text ", count: Int.random(in: 10..<60, using: &rng))
        case 6: return "mixed ascii é ß 漢字 \u{10FFFF}"
        case 7: return "https://cdn.example.com/\(UInt64.random(in: 0...UInt64.max, using: &rng))"
        default: return "\(Int64.random(in: Int64.min...Int64.max, using: &rng))"
        }
    }

    mutating func bytes() -> [UInt8] {
        (0..<Int.random(in: 0..<40, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
    }

    mutating func u64() -> UInt64 {
        [0, 1, 127, 128, UInt64(UInt32.max), .max, UInt64.random(in: 0...UInt64.max, using: &rng)].randomElement(using: &rng)!
    }

    mutating func i64() -> Int64 {
        [0, -1, .min, .max, Int64.random(in: Int64.min...Int64.max, using: &rng)].randomElement(using: &rng)!
    }

    mutating func enumValue<E: RawRepresentable & CaseIterable>(_ type: E.Type) -> E where E.RawValue == Int32 {
        if chance(10) { return E(rawValue: [Int32(-7), 99, 1000, Int32.max].randomElement(using: &rng)!)! }
        return E.allCases.randomElement(using: &rng)!
    }

    mutating func double() -> Double {
        [0.0, -0.0, 1.5, -180, 90, .greatestFiniteMagnitude, .leastNonzeroMagnitude, .infinity, -.infinity,
         Double.random(in: -1e9...1e9, using: &rng)].randomElement(using: &rng)!
    }

    mutating func map() -> [String: String] {
        var map: [String: String] = [:]
        for _ in 0..<Int.random(in: 0..<4, using: &rng) { map[string(allowNUL: false)] = string(allowNUL: false) }
        return map
    }

    mutating func conversation() -> Conversation {
        Conversation.with {
            $0.type = enumValue(ConversationType.self); $0.targetID = string(); $0.channelID = chance(20) ? string() : ""
        }
    }

    mutating func ref() -> MessageRef {
        MessageRef.with {
            $0.clientMsgID = string(); $0.serverMsgUID = string(); $0.seq = u64()
            $0.conversation = chance(70) ? conversation() : nil; $0.senderID = string(); $0.serverTimeMs = i64()
        }
    }

    mutating func element(depth: Int) -> MessageElement {
        var e = MessageElement()
        switch Int.random(in: 0..<(depth > 0 ? 11 : 10), using: &rng) {
        case 0: e.content = .text(TextElement.with { $0.text = string() })
        case 1: e.content = .custom(CustomElement.with { $0.data = bytes(); $0.description = string(); $0.ext = string() })
        case 2: e.content = .image(ImageElement.with {
            $0.format = enumValue(ImageFormat.self)
            $0.images = (0..<Int.random(in: 0...3, using: &rng)).map { _ in
                ImageInfo(type: enumValue(ImageType.self), uuid: string(), size: u64(), width: UInt32.random(in: 0...UInt32.max, using: &rng),
                          height: 198, url: string())
            }
        })
        case 3: e.content = .video(VideoElement.with {
            $0.videoUUID = string(); $0.videoType = "mp4"; $0.videoSize = u64(); $0.durationS = 3; $0.videoURL = string()
            $0.snapshotUUID = string(); $0.snapshotSize = u64(); $0.snapshotWidth = 1; $0.snapshotHeight = 2; $0.snapshotURL = string()
        })
        case 4: e.content = .sound(SoundElement.with { $0.uuid = string(); $0.size = u64(); $0.durationS = 60; $0.url = string() })
        case 5: e.content = .file(FileElement.with { $0.uuid = string(); $0.name = string(); $0.size = u64(); $0.url = string() })
        case 6: e.content = .location(LocationElement.with { $0.description = string(); $0.longitude = double(); $0.latitude = double() })
        case 7: e.content = .face(FaceElement.with { $0.index = Int32.random(in: Int32.min...Int32.max, using: &rng); $0.data = bytes() })
        case 8: e.content = .groupTips(GroupTipsElement.with {
            $0.type = enumValue(GroupTipsType.self); $0.groupID = string(); $0.operatorID = string()
            $0.memberIDs = (0..<Int.random(in: 0..<4, using: &rng)).map { _ in string() }
            $0.groupChanges = [GroupChangeInfo.with { $0.type = enumValue(GroupInfoChangeType.self); $0.value = string(); $0.boolValue = chance(50) }]
            $0.memberChanges = chance(50) ? [MemberChangeInfo.with { $0.userID = string(); $0.muteTimeS = 60 }] : []
            $0.memberCount = 12; $0.pinnedMessage = chance(30) ? ref() : nil
        })
        case 9: e.content = chance(10) ? nil : .text(TextElement())
        default: e.content = .merger(MergerElement.with {
            $0.title = string(); $0.abstracts = [string(), string()]; $0.compatibleText = string()
            $0.messages = (0..<Int.random(in: 0..<4, using: &rng)).map { _ in message(depth: depth - 1) }
            $0.ref = chance(20) ? MergerRef.with { $0.key = string(); $0.size = u64(); $0.sha256 = bytes() } : nil
            $0.messageCount = UInt32($0.messages.count)
        })
        }
        return e
    }

    mutating func message(depth: Int = 3) -> Message {
        Message.with {
            $0.clientMsgID = string(); $0.serverMsgUID = string(); $0.seq = u64(); $0.random = UInt32.random(in: 0...UInt32.max, using: &rng)
            $0.senderID = string(); $0.conversation = chance(90) ? conversation() : nil
            $0.clientTimeMs = i64(); $0.serverTimeMs = i64(); $0.priority = enumValue(Priority.self)
            $0.status = enumValue(MessageStatus.self); $0.flags = UInt32.random(in: 0...UInt32.max, using: &rng)
            $0.targetReceivers = chance(20) ? [string(), string()] : []
            $0.at = chance(20) ? AtInfo.with { $0.userIDs = [string()]; $0.atAll = chance(50) } : nil
            $0.offlinePush = chance(20) ? OfflinePushInfo.with { $0.title = string(); $0.disabled = chance(50) } : nil
            $0.cloudCustomData = chance(30) ? bytes() : []
            $0.customParams = chance(30) ? map() : [:]
            $0.expansion = chance(10) ? map() : [:]
            $0.storagePolicy = enumValue(StoragePolicy.self)
            $0.quote = chance(20) ? ref() : nil
            $0.elements = (0..<Int.random(in: 0...3, using: &rng)).map { _ in element(depth: depth) }
            $0.editVersion = chance(10) ? 3 : 0
            $0.senderNickname = chance(30) ? string() : ""
        }
    }
}

/// A frame whose message holds `layers` nested mergers (Tencent allows 100) around the deepest
/// message a layer may hold (``ValidFrames/deepestLeaf``).
func nestedMergerFrame(layers: Int) -> Frame {
    Frame(ValidFrames.merger(layers: layers, leaf: ValidFrames.deepestLeaf))
}

// MARK: - Golden fixtures (Fixtures/, see Fixtures/README.md)

enum FixtureFiles {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures")
    static let valid = root.appendingPathComponent("valid")
    static let invalid = root.appendingPathComponent("invalid")

    struct ValidCase: Decodable {
        let name: String
        let description: String
        let json_roundtrip: Bool
        /// NAME.canonical.binpb when Google's deterministic serialization of the case differs from
        /// its bytes (duplicated fields merged, unknown fields behind the known ones); nil when
        /// NAME.binpb is canonical itself.
        let canonical: String?
    }

    struct InvalidCase: Decodable {
        let file: String
        let type: String
        let code: String
        let offset: Int?
        let options: [String: Int]
        let description: String
    }

    static func load<T: Decodable>(_ url: URL, as type: T.Type) -> T? {
        guard let data = try? Data(contentsOf: url) else { return nil }
        return try? JSONDecoder().decode(T.self, from: data)
    }

    static let validCases: [String: ValidCase] = {
        let cases = load(valid.appendingPathComponent("manifest.json"), as: [ValidCase].self) ?? []
        return Dictionary(cases.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    }()

    static let invalidCases: [String: InvalidCase] = {
        let cases = load(invalid.appendingPathComponent("manifest.json"), as: [InvalidCase].self) ?? []
        return Dictionary(cases.map { ($0.file, $0) }, uniquingKeysWith: { first, _ in first })
    }()

    static var validNames: [String] { validCases.keys.sorted() }
    static var invalidNames: [String] { invalidCases.keys.sorted() }

    static func bytes(_ url: URL) throws -> [UInt8] { [UInt8](try Data(contentsOf: url)) }
}

/// A JSON value for comparing documents by meaning: objects as dictionaries, numbers by value.
indirect enum FixtureJSON: Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([FixtureJSON])
    case object([String: FixtureJSON])

    struct ParseError: Error, CustomStringConvertible {
        let description: String
    }

    /// Parses one JSON document (RFC 8259; a duplicated object key keeps the last value). A small
    /// hand-written reader: JSONDecoder is some 20 times slower in debug builds, which matters for
    /// the thousands of documents of DifferentialTests.
    static func parse(_ text: String) throws -> FixtureJSON {
        var reader = Reader(bytes: Array(text.utf8))
        let value = try reader.value(depth: 0)
        reader.skipSpace()
        guard reader.position == reader.bytes.count else { throw reader.error("trailing characters") }
        return value
    }

    private struct Reader {
        let bytes: [UInt8]
        var position = 0

        func error(_ what: String) -> ParseError { ParseError(description: "JSON: \(what) at byte \(position)") }

        mutating func skipSpace() {
            while position < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[position]) { position += 1 }
        }

        mutating func literal(_ word: String, _ value: FixtureJSON) throws -> FixtureJSON {
            let utf8 = Array(word.utf8)
            guard bytes.count - position >= utf8.count, Array(bytes[position..<position + utf8.count]) == utf8 else {
                throw error("unexpected character")
            }
            position += utf8.count
            return value
        }

        mutating func value(depth: Int) throws -> FixtureJSON {
            guard depth < 1_000 else { throw error("too deep") }
            skipSpace()
            guard position < bytes.count else { throw error("unexpected end") }
            switch bytes[position] {
            case UInt8(ascii: "n"): return try literal("null", .null)
            case UInt8(ascii: "t"): return try literal("true", .bool(true))
            case UInt8(ascii: "f"): return try literal("false", .bool(false))
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "["):
                position += 1
                var items: [FixtureJSON] = []
                skipSpace()
                if position < bytes.count, bytes[position] == UInt8(ascii: "]") { position += 1; return .array(items) }
                while true {
                    items.append(try value(depth: depth + 1))
                    skipSpace()
                    guard position < bytes.count else { throw error("unterminated array") }
                    position += 1
                    if bytes[position - 1] == UInt8(ascii: "]") { return .array(items) }
                    guard bytes[position - 1] == UInt8(ascii: ",") else { throw error("expected , or ]") }
                }
            case UInt8(ascii: "{"):
                position += 1
                var members: [String: FixtureJSON] = [:]
                skipSpace()
                if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
                    position += 1
                    return .object(members)
                }
                while true {
                    skipSpace()
                    guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else {
                        throw error("expected a key")
                    }
                    let key = try string()
                    skipSpace()
                    guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else {
                        throw error("expected :")
                    }
                    position += 1
                    members[key] = try value(depth: depth + 1)
                    skipSpace()
                    guard position < bytes.count else { throw error("unterminated object") }
                    position += 1
                    if bytes[position - 1] == UInt8(ascii: "}") { return .object(members) }
                    guard bytes[position - 1] == UInt8(ascii: ",") else { throw error("expected , or }") }
                }
            default:
                let start = position
                while position < bytes.count, "+-0123456789.eE".utf8.contains(bytes[position]) { position += 1 }
                guard position > start, let number = Double(String(decoding: bytes[start..<position], as: UTF8.self))
                else { throw error("unexpected character") }
                return .number(number)
            }
        }

        mutating func hex4() throws -> UInt32 {
            guard bytes.count - position >= 4,
                  let value = UInt32(String(decoding: bytes[position..<position + 4], as: UTF8.self), radix: 16)
            else { throw error("bad \\u escape") }
            position += 4
            return value
        }

        mutating func string() throws -> String {
            position += 1  // the opening quote
            var scalars = String.UnicodeScalarView()
            var run = position  // start of the unescaped bytes not yet copied
            func flush(_ end: Int) {
                scalars.append(contentsOf: String(decoding: bytes[run..<end], as: UTF8.self).unicodeScalars)
            }
            while position < bytes.count {
                let byte = bytes[position]
                if byte == UInt8(ascii: "\"") {
                    flush(position)
                    position += 1
                    return String(scalars)
                }
                guard byte == UInt8(ascii: "\\") else { position += 1; continue }
                flush(position)
                position += 1
                guard position < bytes.count else { break }
                let escape = bytes[position]
                position += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scalars.append(Unicode.Scalar(escape))
                case UInt8(ascii: "b"): scalars.append("\u{08}")
                case UInt8(ascii: "f"): scalars.append("\u{0C}")
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "u"):
                    var code = try hex4()
                    if (0xD800..<0xDC00).contains(code), bytes.count - position >= 6,
                       bytes[position] == UInt8(ascii: "\\"), bytes[position + 1] == UInt8(ascii: "u") {
                        position += 2
                        let low = try hex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw error("unpaired surrogate") }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let scalar = Unicode.Scalar(code) else { throw error("unpaired surrogate") }
                    scalars.append(scalar)
                default: throw error("bad escape")
                }
                run = position
            }
            throw error("unterminated string")
        }
    }
}

/// The lines of a pretty-printed document without trailing commas, sorted: equal for two documents
/// that differ only in the order of map entries (one per line), different for any change of
/// layout, escaping or number text.
func sortedLines(_ text: String) -> [String] {
    text.split(separator: "\n", omittingEmptySubsequences: false)
        .map { $0.hasSuffix(",") ? String($0.dropLast()) : String($0) }
        .filter { !$0.isEmpty }
        .sorted()
}

func decodingOptions(_ options: [String: Int]) -> DecodingOptions? {
    var result = DecodingOptions()
    for (key, value) in options {
        switch key {
        case "maxInputSize": result.maxInputSize = value
        case "maxDepth": result.maxDepth = value
        case "maxFieldCount": result.maxFieldCount = value
        case "maxDecodedMemory": result.maxDecodedMemory = value
        default: return nil
        }
    }
    return result
}

// MARK: - Google's reference verdicts (Scripts/google_reference.py)

/// What Google's Python protobuf makes of a seeded corpus of inputs: random frames, pairs of them
/// concatenated and mutations of the valid fixtures. Scripts/google_reference.py explains each field.
struct GoogleReference: Decodable {
    let seed: Int
    let protobuf: String
    let implementation: String
    let cases: [Case]

    struct Case: Decodable {
        let id: Int
        /// "random", "pair" or "mutation:KIND:FIXTURE".
        let kind: String
        /// Base64 of the input bytes.
        let input: String
        /// "accept" or "reject".
        let google: String
        /// `json_format.MessageToJson` of the parsed Frame (accepted, or rejected only for depth).
        let json: String?
        /// Base64 of Google's deterministic serialization of the parsed Frame.
        let canonical: String?
        /// upb refused the input only for its recursion limit; pure-Python protobuf accepts it.
        let googleDepthOnly: Bool
        /// Nesting levels, the top-level Frame counting as 1 (map entries included).
        let depth: Int
        /// The input holds groups (wire types 3 and 4), which Google skips as unknown fields.
        let groups: Bool
        /// Fields on the wire, at every level.
        let fields: Int
        /// A singular sub-message field (a oneof member included) occurs twice in one message.
        let duplicateSubmessage: Bool
        /// A map key or value holds U+0000.
        let nulInMap: Bool
        /// Pairs: the length of the first frame (the input is two encodings concatenated).
        let split: Int?

        var bytes: [UInt8] { [UInt8](Data(base64Encoded: input) ?? Data()) }
        var canonicalBytes: [UInt8]? { canonical.flatMap { Data(base64Encoded: $0) }.map { [UInt8]($0) } }
        /// "random", "pair" or "mutation:KIND" (without the fixture name).
        var category: String { kind.split(separator: ":").prefix(2).joined(separator: ":") }
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Runs `python3 Scripts/google_reference.py` (python3 from PATH) into a temporary folder and
    /// reads its cases.json.
    static func generate(seed: Int, frames: Int, pairs: Int, mutations: Int) throws -> GoogleReference {
        let fileManager = FileManager.default
        let folder = fileManager.temporaryDirectory.appendingPathComponent("imcodec-google-\(UUID().uuidString)")
        try fileManager.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? fileManager.removeItem(at: folder) }
        let script = Protoc.root.appendingPathComponent("Scripts/google_reference.py").path
        let log = folder.appendingPathComponent("stderr.txt")
        _ = fileManager.createFile(atPath: log.path, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script, "--out", folder.path, "--seed", "\(seed)", "--frames", "\(frames)",
                             "--pairs", "\(pairs)", "--mutations", "\(mutations)"]
        var environment = ProcessInfo.processInfo.environment
        environment["PYTHONDONTWRITEBYTECODE"] = "1"
        process.environment = environment
        process.standardOutput = try FileHandle(forWritingTo: log)
        process.standardError = process.standardOutput
        try process.run()
        process.waitUntilExit()
        let output = String(decoding: try Data(contentsOf: log), as: UTF8.self)
        guard process.terminationStatus == 0 else {
            throw Failure(description: "python3 Scripts/google_reference.py failed (\(process.terminationStatus)); "
                + "install Google's protobuf with Scripts/bootstrap:\n\(output)")
        }
        let data = try Data(contentsOf: folder.appendingPathComponent("cases.json"))
        return try JSONDecoder().decode(GoogleReference.self, from: data)
    }
}

extension RandomMessages {
    /// A random frame: a message in `messagePercent` percent of cases, otherwise another payload
    /// (receipts, events, a send ack, history) or none; random schema versions.
    mutating func frame(messagePercent: Int = 70) -> Frame {
        var frame = Frame()
        frame.schemaVersion = chance(80) ? 1 : UInt32.random(in: 0...UInt32.max, using: &rng)
        frame.minReaderVersion = chance(50) ? 1 : 0
        if chance(messagePercent) {
            frame.payload = .message(message(depth: 2))
            return frame
        }
        switch Int.random(in: 0..<8, using: &rng) {
        case 0: frame.payload = .receipt(.with { $0.kind = .read; $0.message = ref(); $0.userID = string() })
        case 1: frame.payload = .receipts(.with { $0.receipts = [.with { $0.kind = .delivered; $0.userID = "u" }] })
        case 2: frame.payload = .recall(.with { $0.message = ref(); $0.revokerID = string() })
        case 3: frame.payload = .typing(.with { $0.conversation = conversation(); $0.userID = string() })
        case 4: frame.payload = .systemNotice(.with { $0.type = string(); $0.params = map(); $0.text = string() })
        case 5: frame.payload = .sendAck(.with { $0.clientMsgID = string(); $0.serverMsgUID = "s"; $0.seq = u64() })
        case 6: frame.payload = .historyResponse(.with { $0.messages = [message(depth: 1)]; $0.finished = chance(50) })
        default: frame.payload = nil
        }
        return frame
    }
}

/// Runs the built `imcodec` executable (the test target depends on it, so `swift test` builds it).
enum CLI {
    struct Result {
        let status: Int32
        let stdout: [UInt8]
        let stderr: String
        var text: String { String(decoding: stdout, as: UTF8.self) }
    }

    static let executable: URL? = {
        // The test bundle sits in the build products folder, next to the executable. Bundle.allBundles
        // is asked only when that fails (swift-corelibs-foundation leaks the array it copies, which
        // LeakSanitizer reports).
        func imcodec(in folder: URL) -> URL? {
            let url = folder.appendingPathComponent("imcodec")
            return FileManager.default.isExecutableFile(atPath: url.path) ? url : nil
        }
        if let url = imcodec(in: URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()) {
            return url
        }
        return Bundle.allBundles.lazy.compactMap { imcodec(in: $0.bundleURL.deletingLastPathComponent()) }.first
    }()

    /// Runs `script` with bash (`set -e -o pipefail`) in the repository's root, with `$BIN` the folder
    /// that holds the built `imcodec`, as the README's commands expect.
    static func shell(_ script: String) throws -> Result {
        let executable = try #require(CLI.executable, "the imcodec executable was not built next to the tests")
        let bin = executable.deletingLastPathComponent().path
        return try run(
            ["-c", "set -e -o pipefail\nBIN='\(bin)'\ncd '\(Protoc.root.path)'\n" + script],
            executable: URL(fileURLWithPath: "/bin/bash"))
    }

    static func run(_ arguments: [String], input: [UInt8] = [], executable: URL? = nil) throws -> Result {
        let executable = try #require(executable ?? CLI.executable, "the imcodec executable was not built next to the tests")
        let inputFile = FileManager.default.temporaryDirectory.appendingPathComponent("imcodec-cli-\(UUID().uuidString)")
        try Data(input).write(to: inputFile)
        defer { try? FileManager.default.removeItem(at: inputFile) }
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.standardInput = try FileHandle(forReadingFrom: inputFile)
        let stdoutFile = FileManager.default.temporaryDirectory.appendingPathComponent("imcodec-out-\(UUID().uuidString)")
        let stderrFile = FileManager.default.temporaryDirectory.appendingPathComponent("imcodec-err-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: stdoutFile.path, contents: nil)
        _ = FileManager.default.createFile(atPath: stderrFile.path, contents: nil)
        defer {
            try? FileManager.default.removeItem(at: stdoutFile)
            try? FileManager.default.removeItem(at: stderrFile)
        }
        process.standardOutput = try FileHandle(forWritingTo: stdoutFile)
        process.standardError = try FileHandle(forWritingTo: stderrFile)
        try process.run()
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus,
            stdout: [UInt8](try Data(contentsOf: stdoutFile)),
            stderr: String(decoding: try Data(contentsOf: stderrFile), as: UTF8.self))
    }
}

/// `value` changed by `change`.
func changed<T>(_ value: T, _ change: (inout T) -> Void) -> T {
    var copy = value
    change(&copy)
    return copy
}

/// One frame per payload kind that breaks no product rule (`validate()` is empty), with every
/// field a rule looks at set: the base cases ValidationTests breaks one rule at a time.
enum ValidFrames {
    static let group = Conversation.group("@TGS#2J4SZEAEL")
    static let c2c = Conversation.oneToOne("user_10086")

    static func ref(in conversation: Conversation = group, sender: String = "user_10010") -> MessageRef {
        MessageRef.with {
            $0.clientMsgID = "cli-7f3a9c2e-0011"; $0.serverMsgUID = "144115233874815003-1732188060-783368690"
            $0.seq = 131; $0.conversation = conversation; $0.senderID = sender; $0.serverTimeMs = 1_732_188_060_133
        }
    }

    static func message(in conversation: Conversation = group, _ text: String = "hello") -> Message {
        var message = Message(from: "user_10010", in: conversation, elements: [.text(text)],
                              clientMsgID: "cli-7f3a9c2e-0011", clientTimeMs: 1_732_188_060_000)
        message.serverMsgUID = "144115233874815003-1732188060-783368690"
        message.seq = 131
        message.serverTimeMs = 1_732_188_060_133
        return message
    }

    static let receipt = MessageReceipt.with {
        $0.kind = .read; $0.message = ref(in: c2c); $0.userID = "user_10086"; $0.isPeerRead = true
        $0.timeMs = 1_732_188_100_000
    }
    static let groupReceipt = MessageReceipt.with {
        $0.kind = .read; $0.message = ref(); $0.groupID = "@TGS#2J4SZEAEL"; $0.readCount = 42; $0.unreadCount = 15
        $0.timeMs = 1_732_188_100_000
    }
    static let c2cReadReceipt = C2CReadReceipt.with { $0.userID = "user_10086"; $0.readTimeMs = 1_732_188_100_000 }

    static var edited: Message {
        var message = message(in: group, "hello (edited)")
        message.editVersion = 1
        return message
    }

    static let receipts = ReceiptBatch.with {
        $0.receipts = [receipt, groupReceipt]; $0.c2cReadReceipts = [c2cReadReceipt]
    }
    static let groupReadMembers = GroupReadMembers.with {
        $0.message = ref(); $0.read = true; $0.memberIDs = ["user_20001", "user_20003"]; $0.nextSeq = 3
    }
    static let recall = RecallEvent.with {
        $0.message = ref(); $0.revokerID = "user_10010"; $0.reason = "wrong group"; $0.timeMs = 1_732_188_090_000
    }
    static let edit = EditEvent.with {
        $0.message = ref(); $0.newMessage = edited; $0.editorID = "user_10010"; $0.timeMs = 1_732_188_095_000
    }
    static let delete = DeleteEvent.with {
        $0.messages = [ref(), MessageRef.with { $0.senderID = "user_20004"; $0.clientMsgID = "cli-9e8d7c6b-0042" }]
        $0.scope = .everyone; $0.operatorID = "user_10010"; $0.timeMs = 1_732_190_000_000
    }
    static let typing = TypingEvent.with { $0.conversation = c2c; $0.userID = "user_10010"; $0.state = .started }
    static let markRead = MarkReadEvent.with {
        $0.conversation = group; $0.userID = "user_10010"; $0.readTimeMs = 1_732_188_060_133; $0.readSeq = 131
    }
    static let markReadAll = MarkReadEvent.with {
        $0.userID = "user_10010"; $0.readTimeMs = 1_732_190_000_000; $0.allConversations = true
    }
    static let systemNotice = SystemNotice.with {
        $0.type = "kicked_offline"; $0.params = ["platform": "iOS"]; $0.text = "signed in elsewhere"; $0.timeMs = 1
    }
    static let sendAck = SendAck.with {
        $0.clientMsgID = "cli-7f3a9c2e-0011"; $0.serverMsgUID = "144115233874815003-1732188060-783368690"; $0.seq = 131
        $0.serverTimeMs = 1_732_188_060_133; $0.conversation = group
    }
    static let sendAckFailed = SendAck.with {
        $0.clientMsgID = "cli-7f3a9c2e-0013"; $0.errorCode = 80001; $0.errorDescription = "sensitive words"
        $0.conversation = group
    }
    static let historyRequest = HistoryRequest.with {
        $0.conversation = group; $0.count = 20; $0.cursor = "eyJzZXEiOjExOH0="; $0.direction = .older
    }
    static let historyResponse = HistoryResponse.with {
        $0.conversation = group; $0.messages = [message(), message(in: group, "second")]
        $0.nextCursor = "eyJzZXEiOjExNH0="
    }
    static let mergerPayload = MergerPayload.with { $0.messages = [message(in: c2c), message(in: c2c, "b")] }

    // Schema version 2: the session layer and the message features.
    static let seqs = [ConversationSeq.with { $0.conversation = group; $0.seq = 131 },
                       ConversationSeq.with { $0.conversation = c2c; $0.seq = 7 }]
    static let loginRequest = LoginRequest.with {
        $0.userID = "user_10010"; $0.token = "eJyrVgrxCdYrSy1SslIy0jNQ0gHzM1NS84ozM3PLMvMywlJzs"
        $0.deviceID = "ios-3F2504E0"; $0.platform = .ios; $0.clientVersion = "5.3.425"; $0.lastSeen = seqs
        $0.readerVersion = 2
    }
    static let loginResult = LoginResult.with {
        $0.serverTimeMs = 1_732_188_060_133; $0.sessionID = "sess-7b1c"; $0.heartbeatIntervalS = 30; $0.maxSeqs = seqs
    }
    static let syncRequest = SyncRequest.with { $0.conversation = group; $0.fromSeq = 130; $0.toSeq = 131; $0.limit = 100 }
    static var syncResponse: SyncResponse {
        var second = message(in: group, "second")
        second.seq = 132
        return SyncResponse.with {
            $0.conversation = group; $0.messages = [message(), second]; $0.hasMore = true; $0.nextFromSeq = 133
            $0.maxSeq = 140
        }
    }
    /// A page of a user's stream: a message and a recall, each a whole frame at its position.
    static var streamSyncResponse: StreamSyncResponse {
        var kept = Frame(message())
        kept.streamPosition = 42
        var recall = Frame.recall(ref(), by: "user_10010")
        recall.streamPosition = 44
        return StreamSyncResponse.with {
            $0.frames = [
                StreamFrame.with { $0.position = 42; $0.frame = kept.serializedBytes() },
                StreamFrame.with { $0.position = 44; $0.frame = recall.serializedBytes() },
            ]
            $0.hasMore = true; $0.nextAfterPosition = 44; $0.headPosition = 60
        }
    }
    static let presence = PresenceUpdate.with {
        $0.userID = "user_10086"; $0.status = .away; $0.lastSeenMs = 1_732_188_000_000; $0.platform = .android
    }
    static let reaction = ReactionEvent.with {
        $0.message = ref(); $0.userID = "user_10086"; $0.emoji = "👍🏽"; $0.action = .add; $0.timeMs = 1_732_188_070_000
        $0.summary = [ReactionSummary.with { $0.emoji = "👍🏽"; $0.count = 3; $0.userIDs = ["user_10086", "user_20001"] }]
    }
    static var poll: Message {
        Message(from: "user_10010", in: group, elements: [MessageElement.with {
            $0.content = .poll(PollElement.with {
                $0.pollID = "poll-1"; $0.question = "Lunch?"; $0.multipleChoice = true
                $0.options = [PollOption.with { $0.id = 1; $0.text = "Noodles" }, PollOption.with { $0.id = 2; $0.text = "Dumplings" }]
            })
        }], clientMsgID: "cli-poll-1", clientTimeMs: 1_732_188_060_000)
    }
    static let pollVote = PollVoteEvent.with {
        $0.pollMessage = ref(); $0.pollID = "poll-1"; $0.voterID = "user_10086"; $0.optionIDs = [1, 2]
    }
    static let pollUpdate = PollUpdate.with {
        $0.pollMessage = ref(); $0.pollID = "poll-1"; $0.closed = true; $0.closedBy = "user_10010"; $0.voterCount = 3
        $0.results = [PollOptionResult.with { $0.optionID = 1; $0.votes = 2; $0.voterIDs = ["user_10086", "user_20001"] },
                      PollOptionResult.with { $0.optionID = 2; $0.votes = 3 }]
    }

    static let frames: [String: Frame] = [
        "message": Frame(message()),
        "merger": Frame(merger(layers: 2, leaf: message(in: c2c))),
        "receipt": Frame(.receipt(receipt)),
        "groupReceipt": Frame(.receipt(groupReceipt)),
        "receipts": Frame(.receipts(receipts)),
        "c2cReadReceipt": Frame(.c2cReadReceipt(c2cReadReceipt)),
        "groupReadMembers": Frame(.groupReadMembers(groupReadMembers)),
        "recall": Frame(.recall(recall)),
        "edit": Frame(.edit(edit)),
        "delete": Frame(.delete(delete)),
        "typing": Frame(.typing(typing)),
        "markRead": Frame(.markRead(markRead)),
        "markReadAll": Frame(.markRead(markReadAll)),
        "systemNotice": Frame(.systemNotice(systemNotice)),
        "sendAck": Frame(.sendAck(sendAck)),
        "sendAckFailed": Frame(.sendAck(sendAckFailed)),
        "historyRequest": Frame(.historyRequest(historyRequest)),
        "historyResponse": Frame(.historyResponse(historyResponse)),
        "mergerPayload": Frame(.mergerPayload(mergerPayload)),
        "readReceiptRequest": Frame(.readReceiptRequest(ReadReceiptRequest.with { $0.messages = [ref(), ref(in: c2c)] })),
        "groupReadMembersRequest": Frame(.groupReadMembersRequest(GroupReadMembersRequest.with {
            $0.message = ref(); $0.filter = .unread; $0.count = 100
        })),
        "loginRequest": Frame(.loginRequest(loginRequest)),
        "loginResult": Frame(.loginResult(loginResult)),
        "loginFailed": Frame(.loginResult(LoginResult.with { $0.errorCode = 70001; $0.errorDescription = "token expired" })),
        "ping": Frame(.ping(Ping.with { $0.id = 9; $0.timeMs = 1_732_188_060_133 })),
        "pong": Frame(.pong(Pong.with { $0.id = 9; $0.timeMs = 1_732_188_060_140 })),
        "logout": Frame(.logout(Logout.with { $0.sessionID = "sess-7b1c" })),
        "kickedOffline": Frame(.kickedOffline(KickedOffline.with {
            $0.reason = .loggedInElsewhere; $0.otherDeviceID = "android-9"; $0.otherPlatform = .android
        })),
        "maxSeqRequest": Frame(.maxSeqRequest(MaxSeqRequest.with { $0.conversations = [group, c2c] })),
        "maxSeqResponse": Frame(.maxSeqResponse(MaxSeqResponse.with { $0.maxSeqs = seqs })),
        "syncRequest": Frame(.syncRequest(syncRequest)),
        "syncResponse": Frame(.syncResponse(syncResponse)),
        "streamSyncRequest": Frame(.streamSyncRequest(StreamSyncRequest.with { $0.afterPosition = 41; $0.limit = 100 })),
        "streamSyncResponse": Frame(.streamSyncResponse(streamSyncResponse)),
        "streamAck": Frame(.streamAck(StreamAck.with { $0.position = 44 })),
        "presence": Frame(.presence(presence)),
        "presenceSubscription": Frame(.presenceSubscription(PresenceSubscription.with {
            $0.action = .subscribe; $0.userIDs = ["user_10086", "user_20001"]
        })),
        "membership": Frame(.membership(MembershipChange.with { $0.action = .join; $0.conversation = group })),
        "requestResult": Frame(.requestResult(RequestResult.with { $0.serverTimeMs = 1_732_188_060_133 })),
        "reaction": Frame(.reaction(reaction)),
        "pin": Frame(.pin(PinEvent.with {
            $0.conversation = group; $0.message = ref(); $0.pinned = true; $0.operatorID = "user_10010"
        })),
        "poll": Frame(poll),
        "pollVote": Frame(.pollVote(pollVote)),
        "pollUpdate": Frame(.pollUpdate(pollUpdate)),
        "disappearingTimer": Frame(.disappearingTimer(DisappearingTimerEvent.with {
            $0.conversation = c2c; $0.expireAfterS = 604_800; $0.operatorID = "user_10010"
        })),
        "receiveOption": Frame(.receiveOption(ReceiveOptionChange.with {
            $0.conversation = group; $0.option = .receiveNotNotify; $0.userID = "user_10010"
        })),
    ]

    /// `layers` nested merger layers of realistic messages around `leaf`, as Tencent's clients make
    /// them: each layer is a merger message forwarding the layer below and a text message.
    static func merger(layers: Int, leaf: Message) -> Message {
        var inner = leaf
        for layer in 0..<layers {
            var forwarded = Message.merger(from: "user_10010", in: c2c, title: "Chat history, layer \(layer + 1)",
                                           messages: [inner, message(in: c2c, "see above")],
                                           clientMsgID: "cli-merger-\(layer)")
            forwarded.serverMsgUID = "144115233874815003-1732188060-\(layer)"
            forwarded.clientTimeMs = 1_732_188_060_000
            forwarded.random = UInt32(layer)
            inner = forwarded
        }
        return inner
    }

    /// The deepest message a merger layer may hold: an image, whose renditions (ImageInfo) sit 3
    /// levels below the message (MessageElement, ImageElement, ImageInfo), quoting another message
    /// (MessageRef, Conversation: 2 levels).
    static var deepestLeaf: Message {
        var leaf = Message.image(from: "user_10086", in: c2c, format: .jpg, renditions: [
            ImageInfo(type: .original, uuid: "img-1", size: 1_048_576, width: 4032, height: 3024,
                      url: "https://x/o.jpg"),
            ImageInfo(type: .thumbnail, uuid: "img-1t", size: 9_000, width: 264, height: 198, url: "https://x/t.jpg"),
        ], clientMsgID: "cli-leaf")
        leaf.quote = ref(in: c2c)
        leaf.clientTimeMs = 1_732_188_000_000
        leaf.random = 7
        return leaf
    }
}

extension ValidFrames {
    /// A valid message whose frame encodes to exactly `size` bytes (its cloud custom data fills it).
    static func frame(encodedSize size: Int) -> Frame {
        var filled = message()
        var fill = size
        for _ in 0..<8 {
            filled.cloudCustomData = Array(repeating: 0x5A, count: max(0, fill))
            let count = Frame(filled).serializedBytes().count
            if count == size { break }
            fill += size - count
        }
        return Frame(filled)
    }
}

/// Seeded random frames of every payload kind, most of them valid (realistic ids, conversations and
/// times, edge strings and numbers), some with one field cleared or set out of range: the values
/// the property "what validate() accepts, decoding accepts and returns equal" is checked on.
struct RandomFrames {
    var random: RandomMessages

    init(seed: UInt64) { random = RandomMessages(seed: seed) }

    mutating func pick<T>(_ values: [T]) -> T { values.randomElement(using: &random.rng)! }

    mutating func id() -> String {
        random.chance(85) ? "user_\(Int.random(in: 0..<100_000, using: &random.rng))" : random.string(allowNUL: false)
    }

    mutating func conversation() -> Conversation {
        switch Int.random(in: 0..<10, using: &random.rng) {
        case 0: return Conversation.with { $0.type = .ultraGroup; $0.targetID = "ug-1"; $0.channelID = "announcements" }
        case 1: return Conversation.with { $0.type = .chatroom; $0.targetID = "@TGS#aRoom" }
        case 2: return Conversation.with { $0.type = .system }
        case 3: return random.conversation()
        case 4, 5, 6: return .group(random.chance(90) ? "@TGS#2J4SZEAEL" : random.string())
        default: return .oneToOne(id())
        }
    }

    mutating func element() -> MessageElement {
        switch Int.random(in: 0..<8, using: &random.rng) {
        case 0: return .custom(random.bytes(), description: random.string(), ext: random.string())
        case 1: return .face(index: Int32.random(in: Int32.min...Int32.max, using: &random.rng), data: random.bytes())
        case 2:
            let latitude = pick([-90, 0, 22.5431, 90, random.double()])
            let longitude = pick([-180, 0, 114.0579, 180, random.double()])
            return .location(latitude: latitude, longitude: longitude, description: random.string())
        case 3: return .image(format: random.enumValue(ImageFormat.self), [
            ImageInfo(type: .original, uuid: random.string(), size: random.u64(), width: 4032, height: 3024,
                      url: random.string()),
        ])
        default: return .text(random.string())
        }
    }

    mutating func message(in conversation: Conversation? = nil, mergerLayers: Int = 0) -> Message {
        let conversation = conversation ?? self.conversation()
        var elements = (0..<Int.random(in: 1...3, using: &random.rng)).map { _ in element() }
        if mergerLayers > 0 && random.chance(30) {
            let count = Int.random(in: 1...3, using: &random.rng)
            let inner = (0..<count).map { _ in message(mergerLayers: mergerLayers - 1) }
            elements = [.merger(title: random.string(), abstracts: [random.string()], compatibleText: "[Chat History]",
                                messages: inner)]
        } else if random.chance(10) {
            let size = pick([0, 1, 104_857_600, 104_857_601, random.u64()])
            let file = MessageElement.file(uuid: random.string(), name: random.string(), size: size,
                                           url: random.string())
            let voice = SoundElement.with { $0.uuid = "s"; $0.durationS = 9 }
            let sound = MessageElement.with { $0.content = .sound(voice) }
            elements = [pick([file, sound])]
        }
        var result = Message(from: id(), in: conversation, elements: elements,
                             clientMsgID: random.string(allowNUL: false), clientTimeMs: random.i64())
        result.serverMsgUID = random.string()
        result.seq = random.u64()
        result.serverTimeMs = random.i64()
        result.status = random.enumValue(MessageStatus.self)
        result.flags = UInt32.random(in: 0...UInt32.max, using: &random.rng)
        result.customParams = random.chance(30) ? random.map() : [:]
        result.cloudCustomData = random.chance(30) ? random.bytes() : []
        if random.chance(20) { result.quote = ref() }
        if conversation.type == .group && random.chance(30) {
            let count = pick([1, 2, 30, 31])
            result.at = AtInfo.with { $0.userIDs = (0..<count).map { "u\($0)" }; $0.atAll = count == 2 }
        }
        return result
    }

    mutating func ref() -> MessageRef {
        MessageRef.with {
            $0.serverMsgUID = random.chance(70) ? "144115233874815003-\(random.u64())" : ""
            $0.clientMsgID = random.chance(80) ? "cli-\(random.u64())" : ""
            $0.senderID = random.chance(80) ? id() : ""
            $0.seq = random.u64()
            $0.conversation = random.chance(80) ? conversation() : nil
            $0.serverTimeMs = random.i64()
        }
    }

    mutating func time() -> Int64 {
        random.chance(90) ? Int64.random(in: 1...1_900_000_000_000, using: &random.rng) : random.i64()
    }

    mutating func frame() -> Frame {
        switch Int.random(in: 0..<16, using: &random.rng) {
        case 0: return Frame(message(mergerLayers: 3))
        case 1: return Frame(.receipt(receipt()))
        case 2: return Frame(.receipts(ReceiptBatch.with {
            $0.receipts = (0..<Int.random(in: 0...3, using: &random.rng)).map { _ in receipt() }
            $0.c2cReadReceipts = (0..<Int.random(in: 0...2, using: &random.rng)).map { _ in c2cReadReceipt() }
        }))
        case 3: return Frame(.c2cReadReceipt(c2cReadReceipt()))
        case 4: return Frame(.groupReadMembers(GroupReadMembers.with {
            $0.message = ref(); $0.read = random.chance(50)
            $0.memberIDs = (0..<Int.random(in: 0...5, using: &random.rng)).map { _ in id() }
            $0.finished = random.chance(50); $0.nextSeq = random.chance(80) ? random.u64() : 0
        }))
        case 5: return Frame(.recall(RecallEvent.with {
            $0.message = ref(); $0.revokerID = random.chance(90) ? id() : ""; $0.reason = random.string()
            $0.timeMs = time()
        }))
        case 6:
            var edited = message()
            let ref = random.chance(85) ? edited.reference : ref()
            edited.editVersion = pick([0, 1, 2, 7])
            return Frame(.edit(EditEvent.with {
                $0.message = ref; $0.newMessage = random.chance(95) ? edited : nil; $0.editorID = id()
                $0.timeMs = time()
            }))
        case 7: return Frame(.delete(DeleteEvent.with {
            $0.messages = (0..<Int.random(in: 0...3, using: &random.rng)).map { _ in ref() }
            $0.scope = random.enumValue(DeleteScope.self); $0.operatorID = random.chance(90) ? id() : ""
            $0.timeMs = time()
        }))
        case 8: return Frame(.typing(TypingEvent.with {
            $0.conversation = random.chance(90) ? conversation() : nil; $0.userID = id()
            $0.state = random.enumValue(TypingState.self)
        }))
        case 9:
            let all = random.chance(30)
            return Frame(.markRead(MarkReadEvent.with {
                $0.conversation = all == random.chance(90) ? nil : conversation(); $0.userID = id()
                $0.readTimeMs = random.chance(80) ? time() : 0; $0.readSeq = random.chance(50) ? random.u64() : 0
                $0.allConversations = all
            }))
        case 10: return Frame(.systemNotice(SystemNotice.with {
            $0.type = random.chance(90) ? "kicked_offline" : ""; $0.params = random.map(); $0.text = random.string()
            $0.timeMs = time()
        }))
        case 11:
            let failed = random.chance(40)
            return Frame(.sendAck(SendAck.with {
                $0.clientMsgID = random.chance(95) ? "cli-\(random.u64())" : ""
                $0.serverMsgUID = failed == random.chance(90) ? "" : "144115233874815003-\(random.u64())"
                $0.errorCode = failed ? pick([80001, 20007, 20009, Int32.min, Int32.max]) : 0
                $0.errorDescription = failed ? random.string() : ""; $0.seq = random.u64(); $0.serverTimeMs = time()
                $0.conversation = random.chance(80) ? conversation() : nil
            }))
        case 12: return Frame(.historyRequest(HistoryRequest.with {
            $0.conversation = random.chance(95) ? conversation() : nil
            $0.count = pick([0, 1, 20, 100, 101, UInt32.max])
            $0.cursor = random.string(); $0.direction = random.enumValue(HistoryDirection.self)
        }))
        case 13:
            let conversation = random.chance(90) ? Conversation.group("@TGS#2J4SZEAEL") : self.conversation()
            return Frame(.historyResponse(HistoryResponse.with {
                $0.conversation = conversation
                let count = Int.random(in: 0...4, using: &random.rng)
                $0.messages = (0..<count).map { _ in message(in: conversation, mergerLayers: 1) }
                $0.finished = random.chance(50); $0.nextCursor = random.chance(80) ? "cursor-\(random.u64())" : ""
            }))
        case 14: return Frame(.mergerPayload(MergerPayload.with {
            $0.messages = (0..<Int.random(in: 0...4, using: &random.rng)).map { _ in message(mergerLayers: 2) }
        }))
        default: return random.chance(50) ? Frame() : Frame(message())
        }
    }

    mutating func receipt() -> MessageReceipt {
        let group = random.chance(40)
        return MessageReceipt.with {
            $0.kind = random.enumValue(ReceiptKind.self); $0.message = ref(); $0.timeMs = time()
            $0.userID = group && random.chance(70) ? "" : id(); $0.isPeerRead = !group && random.chance(50)
            $0.groupID = group ? "@TGS#2J4SZEAEL" : ""
            $0.readCount = group || random.chance(5) ? random.u64() : 0; $0.unreadCount = group ? random.u64() : 0
        }
    }

    mutating func c2cReadReceipt() -> C2CReadReceipt {
        C2CReadReceipt.with { $0.userID = random.chance(90) ? id() : ""; $0.readTimeMs = time() }
    }
}

/// Runs one decode in a child process, the `imcodec-heap-probe` executable (Tests/HeapProbe), and
/// returns what it measured. The child does nothing but that decode between its two heap readings,
/// so the figure counts this decode's allocations only, whatever other tests do meanwhile.
enum HeapProbe {
    /// What the child measured.
    struct Measurement {
        /// `decoded`, or the IMCodecError code.
        let result: String
        /// Heap bytes the decode allocated and still held (the value), or nil where the C library
        /// keeps no statistics (e.g. under a sanitizer).
        let heap: Int?
        let estimatedArenaBytes: Int
        let estimatedValueBytes: Int
        let arenaBytesUsed: Int
        let arenaBytesReserved: Int
        let wrappedFields: Int
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Built next to `imcodec` (the test target depends on both), which CLI.executable finds.
    static let executable: URL? = {
        guard let folder = CLI.executable?.deletingLastPathComponent() else { return nil }
        let url = folder.appendingPathComponent("imcodec-heap-probe")
        return FileManager.default.isExecutableFile(atPath: url.path) ? url : nil
    }()

    /// Decodes `bytes` as a Frame with `options` in the child and reports its measurement.
    static func decode(_ bytes: [UInt8], options: DecodingOptions) throws -> Measurement {
        guard let executable else { throw Failure(description: "imcodec-heap-probe was not built next to the tests") }
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("imcodec-heap-\(UUID().uuidString)")
        try Data(bytes).write(to: input)
        defer { try? FileManager.default.removeItem(at: input) }
        var arguments = [input.path, "--max-input-size", "\(options.maxInputSize)", "--max-depth",
                         "\(options.maxDepth)", "--max-field-count", "\(options.maxFieldCount)"]
        if let memory = options.maxDecodedMemory { arguments += ["--max-decoded-memory", "\(memory)"] }
        // Output to files rather than a Pipe, as CLI.run does: Foundation's Process leaks a weak
        // reference's side table with a Pipe, which LeakSanitizer reports (Scripts/test-sanitizers).
        let temporary = FileManager.default.temporaryDirectory
        let outputFile = temporary.appendingPathComponent("imcodec-heap-out-\(UUID().uuidString)")
        let errorFile = temporary.appendingPathComponent("imcodec-heap-err-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: outputFile.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errorFile.path, contents: nil)
        defer {
            try? FileManager.default.removeItem(at: outputFile)
            try? FileManager.default.removeItem(at: errorFile)
        }
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.standardInput = try FileHandle(forReadingFrom: input)
        process.standardOutput = try FileHandle(forWritingTo: outputFile)
        process.standardError = try FileHandle(forWritingTo: errorFile)
        try process.run()
        process.waitUntilExit()
        let text = String(decoding: try Data(contentsOf: outputFile), as: UTF8.self)
        guard process.terminationStatus == 0 else {
            let errors = String(decoding: try Data(contentsOf: errorFile), as: UTF8.self)
            throw Failure(description: "imcodec-heap-probe exited with \(process.terminationStatus): \(text)\(errors)")
        }
        var values: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
            if parts.count == 2 { values[parts[0]] = parts[1] }
        }
        guard let result = values["result"], let heap = values["heap"] else {
            throw Failure(description: "imcodec-heap-probe printed \(text)")
        }
        func figure(_ key: String) -> Int { values[key].flatMap { Int($0) } ?? 0 }
        return Measurement(
            result: result, heap: Int(heap), estimatedArenaBytes: figure("estimatedArenaBytes"),
            estimatedValueBytes: figure("estimatedValueBytes"), arenaBytesUsed: figure("arenaBytesUsed"),
            arenaBytesReserved: figure("arenaBytesReserved"), wrappedFields: figure("wrappedFields"))
    }
}
