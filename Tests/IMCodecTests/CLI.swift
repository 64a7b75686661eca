import Foundation
import Testing

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
            executable: URL(fileURLWithPath: "/bin/bash")
        )
    }

    static func run(_ arguments: [String], input: [UInt8] = [], executable: URL? = nil) throws -> Result {
        let executable = try #require(
            executable ?? CLI.executable,
            "the imcodec executable was not built next to the tests"
        )
        let inputFile = FileManager.default.temporaryDirectory.appendingPathComponent(
            "imcodec-cli-\(UUID().uuidString)"
        )
        try Data(input).write(to: inputFile)
        defer { try? FileManager.default.removeItem(at: inputFile) }
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.standardInput = try FileHandle(forReadingFrom: inputFile)
        let stdoutFile = FileManager.default.temporaryDirectory.appendingPathComponent(
            "imcodec-out-\(UUID().uuidString)"
        )
        let stderrFile = FileManager.default.temporaryDirectory.appendingPathComponent(
            "imcodec-err-\(UUID().uuidString)"
        )
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
            stderr: String(decoding: try Data(contentsOf: stderrFile), as: UTF8.self)
        )
    }
}
