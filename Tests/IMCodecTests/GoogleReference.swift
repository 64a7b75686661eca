// Google's reference verdicts (Scripts/google_reference.py).
import Foundation
import IMCodecTestSupport

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
        var environment = ProcessInfo.processInfo.environment
        environment["PYTHONDONTWRITEBYTECODE"] = "1"
        let (termination, log, _) = try ChildProcess.run(
            "/usr/bin/env",
            [
                "python3", script, "--out", folder.path, "--seed", "\(seed)", "--frames", "\(frames)",
                "--pairs", "\(pairs)", "--mutations", "\(mutations)",
            ],
            environment: environment,
            errorToOutput: true
        )
        guard termination == .exited(0) else {
            throw Failure(
                description: "python3 Scripts/google_reference.py failed (\(termination)); "
                    + "install Google's protobuf with Scripts/bootstrap:\n\(String(decoding: log, as: UTF8.self))"
            )
        }
        let data = try Data(contentsOf: folder.appendingPathComponent("cases.json"))
        return try JSONDecoder().decode(GoogleReference.self, from: data)
    }
}
