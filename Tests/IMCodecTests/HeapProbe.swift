import Foundation
import IMCodec
import IMCodecTestSupport

/// Runs one decode in a child process, the `imcodec-heap-probe` executable (Tests/HeapProbe), and
/// returns what it measured. The child does nothing but that decode between its two heap readings,
/// so the figure counts this decode's allocations only, whatever other tests do meanwhile.
enum HeapProbe {
    /// What the child measured.
    struct Measurement {
        /// `decoded`, or the IMCodecError code.
        let result: String
        /// Heap bytes the decode allocated and still held (the value), or nil where the allocator is
        /// not interposed (under a sanitizer).
        let heap: Int?
        /// The highest heap above what was live before, during the decode (arena, value and
        /// everything transient), or nil as `heap`.
        let peak: Int?
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
        var arguments = [
            input.path, "--max-input-size", "\(options.maxInputSize)", "--max-depth",
            "\(options.maxDepth)", "--max-field-count", "\(options.maxFieldCount)",
        ]
        if let memory = options.maxDecodedMemory { arguments += ["--max-decoded-memory", "\(memory)"] }
        let (termination, output, error) = try ChildProcess.run(executable.path, arguments, input: bytes)
        let text = String(decoding: output, as: UTF8.self)
        guard termination == .exited(0) else {
            let errors = String(decoding: error, as: UTF8.self)
            throw Failure(description: "imcodec-heap-probe exited with \(termination): \(text)\(errors)")
        }
        var values: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
            if parts.count == 2 { values[parts[0]] = parts[1] }
        }
        guard let result = values["result"], let heap = values["heap"], let peak = values["peak"] else {
            throw Failure(description: "imcodec-heap-probe printed \(text)")
        }
        func figure(_ key: String) -> Int { values[key].flatMap { Int($0) } ?? 0 }
        return Measurement(
            result: result,
            heap: Int(heap),
            peak: Int(peak),
            estimatedArenaBytes: figure("estimatedArenaBytes"),
            estimatedValueBytes: figure("estimatedValueBytes"),
            arenaBytesUsed: figure("arenaBytesUsed"),
            arenaBytesReserved: figure("arenaBytesReserved"),
            wrappedFields: figure("wrappedFields")
        )
    }
}
