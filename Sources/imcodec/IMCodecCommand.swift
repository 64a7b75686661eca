#if Tools
import ArgumentParser
import Foundation
import IMCodec

/// `imcodec`: see, check and produce IMCodec frames from the command line.
///
/// Exit status: 0 success, 1 failure (bad input, one line on standard error: the error code, the
/// reason and the byte offset where known; with `--delimited`, any record that failed), 2 usage.
@main
struct IMCodecCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "imcodec",
        abstract: "Encode, decode, inspect and validate IMCodec instant-messaging frames.",
        discussion: """
            Binary input is protobuf wire format (Schemas/imcodec/v1); JSON is canonical proto3 JSON. \
            FILE defaults to standard input. Empty input (0 bytes) is bad input for every command that \
            reads binary.
            \(ExitStatus.imcodec)
            """,
        version: "imcodec \(IMCodecRelease.version) (IMCodec \(IMCodecRelease.version), schema "
            + "\(IMCodecRelease.schemaPackage), schema_version \(IMCodecRelease.schemaVersion))",
        subcommands: [Demo.self, Decode.self, Encode.self, Inspect.self, Validate.self]
    )

    static func main() {
        do {
            try HelpTopic.check(Array(CommandLine.arguments.dropFirst()), root: Self.self)
            var command = try parseAsRoot()
            try command.run()
        } catch let error as IMCodecError {
            FileHandle.standardError.write(Data("imcodec: \(error)\n".utf8))
            Foundation.exit(1)
        } catch let error as InputRejected {
            FileHandle.standardError.write(Data("imcodec: \(error.message)\n".utf8))
            Foundation.exit(1)
        } catch let error as UsageRejected {
            FileHandle.standardError.write(Data("imcodec: \(error.description)\n".utf8))
            Foundation.exit(2)
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

/// What `imcodec --help` says about exit statuses: the same codes as `imcodec-relay`.
enum ExitStatus {
    static let imcodec = """
        Exit status: 0 success, 1 failure (bad input; with --delimited, any record that failed), \
        2 usage (an unknown command, option or help topic, or a bad option value).
        """
}

/// `imcodec help TOPIC`: ArgumentParser prints the root's help, exit status 0, for a topic that
/// names no subcommand; this refuses it as a usage error instead.
enum HelpTopic {
    /// Throws ``UsageRejected`` when `arguments` ask for help on a command `root` does not have.
    static func check(_ arguments: [String], root: any ParsableCommand.Type) throws {
        guard arguments.first == "help" else { return }
        var command = root
        for word in arguments.dropFirst() where !word.hasPrefix("-") {
            let subcommands = command.configuration.subcommands
            guard
                let next = subcommands.first(where: {
                    $0._commandName == word || $0.configuration.aliases.contains(word)
                })
            else {
                let topics = subcommands.map { $0._commandName }.joined(separator: ", ")
                throw UsageRejected(
                    description: "unknown help topic '\(word)'"
                        + (topics.isEmpty
                            ? "; \(command._commandName) has no subcommands" : "; the topics are: \(topics)")
                )
            }
            command = next
        }
    }
}

/// Bad input found by a command (exit status 1), as opposed to bad usage (exit status 2).
struct InputRejected: Error {
    let message: String
}

/// Bad usage found while running (exit status 2 and the message on standard error).
struct UsageRejected: Error, CustomStringConvertible {
    let description: String
}

/// The input file argument shared by every subcommand.
struct InputOptions: ParsableArguments {
    @Argument(help: "The input file (standard input when omitted).")
    var file: String?

    /// What the input is called in messages: the file's path, or "standard input".
    var name: String { file ?? "standard input" }

    /// The whole input.
    /// - Throws: ``IMCodecError`` with code `io` and the operating system's reason when the file
    ///   cannot be opened or read (missing, a directory, no permission, ...).
    func read() throws -> [UInt8] {
        guard let file else { return try POSIXFile.readAll(descriptor: 0, name: "standard input") }
        let descriptor = open(file, O_RDONLY)
        guard descriptor >= 0 else { throw POSIXFile.error("cannot read \(file)", errno: errno) }
        defer { close(descriptor) }
        return try POSIXFile.readAll(descriptor: descriptor, name: file)
    }

    /// The whole input, which must hold at least one byte: an empty input decodes to an empty
    /// message, which would look like success.
    /// - Throws: ``InputRejected`` for empty input; what ``read()`` throws.
    func readBinary() throws -> [UInt8] {
        let bytes = try read()
        guard !bytes.isEmpty else {
            throw InputRejected(message: "empty input: \(name) holds 0 bytes, so there is no frame to read")
        }
        return bytes
    }
}

/// Reading and writing whole files with the operating system's reason on failure.
enum POSIXFile {
    /// An `io` error: `what: reason`, the reason being `strerror(errno)` in lower case ("no such file
    /// or directory", "is a directory", "permission denied").
    static func error(_ what: String, errno code: Int32) -> IMCodecError {
        IMCodecError(code: .io, reason: "\(what): \(reason(code))")
    }

    /// `strerror(code)`, starting in lower case as it follows a colon.
    static func reason(_ code: Int32) -> String {
        let text = String(cString: strerror(code))
        return text.prefix(1).lowercased() + text.dropFirst()
    }

    /// Reads `descriptor` to its end.
    static func readAll(descriptor: Int32, name: String) throws -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count == 0 { return bytes }
            if count < 0 {
                if errno == EINTR { continue }
                throw error("cannot read \(name)", errno: errno)
            }
            bytes.append(contentsOf: chunk[0..<count])
        }
    }

    /// Writes `bytes` to `descriptor`.
    static func writeAll(_ bytes: [UInt8], descriptor: Int32, name: String) throws {
        var offset = 0
        while offset < bytes.count {
            let count = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress! + offset, $0.count - offset) }
            if count < 0 {
                if errno == EINTR { continue }
                throw error("cannot write \(name)", errno: errno)
            }
            offset += count
        }
    }

    /// Creates or truncates the file at `path` and writes `bytes` to it.
    static func writeFile(_ bytes: [UInt8], path: String) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard descriptor >= 0 else { throw error("cannot write \(path)", errno: errno) }
        defer { close(descriptor) }
        try writeAll(bytes, descriptor: descriptor, name: path)
    }
}

/// Decoding binary input that might be something else.
enum BinaryInput {
    /// Whether `bytes` look like JSON: the first byte that is not white space is `{`.
    static func looksLikeJSON(_ bytes: [UInt8]) -> Bool {
        bytes.first { $0 != 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D } == UInt8(ascii: "{")
    }

    /// `error`, or, when `bytes` look like JSON, a message that says so and suggests `imcodec encode`.
    static func explain(_ error: any Error, for bytes: [UInt8]) -> any Error {
        guard let error = error as? IMCodecError, looksLikeJSON(bytes) else { return error }
        return InputRejected(
            message: "\(error.code): the input looks like JSON, not binary protobuf "
                + "(it starts with '{'); to turn JSON into binary, run: imcodec encode FILE"
        )
    }

    /// Decodes a ``Frame`` from `bytes`.
    /// - Throws: the decoding error, or, for input that looks like JSON, an ``InputRejected`` that says so.
    static func frame(_ bytes: [UInt8], options: DecodingOptions = DecodingOptions()) throws -> Frame {
        do {
            return try Frame(serializedBytes: bytes, options: options)
        } catch {
            throw explain(error, for: bytes)
        }
    }
}

/// Where a byte offset falls in a text: 1-based line and column (columns count Unicode scalars).
struct TextPosition: Equatable {
    let line: Int
    let column: Int

    /// The position of byte `offset` of the UTF-8 text `bytes`.
    init(offset: Int, in bytes: some Collection<UInt8>) {
        var line = 1
        var column = 1
        for byte in bytes.prefix(max(0, offset)) {
            if byte == 0x0A {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column += 1
            }
        }
        self.line = line
        self.column = column
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
        let message = Array(
            "imcodec was built without the Tools trait; build it with swift build --traits Tools\n".utf8
        )
        _ = message.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
        exit(2)
    }
}
#endif
