#if Tools
import ArgumentParser
import Foundation
import IMCodec

/// `imcodec`: see, check and produce IMCodec frames from the command line.
///
/// Exit status: 0 success, 1 bad input (one line on standard error: the error code, the reason and
/// the byte offset where known), 2 usage.
@main
struct IMCodecCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "imcodec",
        abstract: "Encode, decode, inspect and validate IMCodec instant-messaging frames.",
        discussion: """
            Binary input is protobuf wire format (Schemas/imcodec/v1); JSON is canonical proto3 JSON. \
            FILE defaults to standard input.
            Exit status: 0 success, 1 bad input, 2 usage.
            """,
        subcommands: [Demo.self, Decode.self, Encode.self, Inspect.self, Validate.self]
    )

    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch let error as IMCodecError {
            FileHandle.standardError.write(Data("imcodec: \(error)\n".utf8))
            Foundation.exit(1)
        } catch let error as InputRejected {
            FileHandle.standardError.write(Data("imcodec: \(error.message)\n".utf8))
            Foundation.exit(1)
        } catch {
            let code = exitCode(for: error)
            if code == .success || error is CleanExit {
                exit(withError: error)
            }
            FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
            Foundation.exit(2)
        }
    }
}

/// Bad input found by a command (exit status 1), as opposed to bad usage (exit status 2).
struct InputRejected: Error {
    let message: String
}

/// The input file argument shared by every subcommand.
struct InputOptions: ParsableArguments {
    @Argument(help: "The input file (standard input when omitted).")
    var file: String?

    /// The whole input.
    func read() throws -> [UInt8] {
        if let file {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw IMCodecError(code: .io, reason: "cannot read \(file)")
            }
            return [UInt8](data)
        }
        return [UInt8](FileHandle.standardInput.readDataToEndOfFile())
    }
}

/// Writes to standard output without going through `print`'s line handling.
func writeStandardOutput(_ bytes: [UInt8]) {
    FileHandle.standardOutput.write(Data(bytes))
}

func writeStandardOutput(_ text: String) {
    FileHandle.standardOutput.write(Data(text.utf8))
}
#else
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Built without the Tools trait (Package.swift): says how to build the real imcodec, exits 2.
@main
enum IMCodecCommand {
    static func main() {
        let message = Array("imcodec was built without the Tools trait; build it with swift build --traits Tools\n".utf8)
        _ = message.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
        exit(2)
    }
}
#endif
