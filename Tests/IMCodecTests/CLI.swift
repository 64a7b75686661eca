import Foundation
import IMCodecTestSupport
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
        let (termination, stdout, stderr) = try ChildProcess.run(executable.path, arguments, input: input)
        return Result(status: termination.status, stdout: stdout, stderr: String(decoding: stderr, as: UTF8.self))
    }
}
