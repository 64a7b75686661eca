#if Tools
import ArgumentParser
import Foundation
import IMCodec

struct Encode: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Read proto3 JSON and write canonical binary protobuf.",
        discussion: """
            Without --delimited the input is one JSON object. With --delimited it is one JSON object per \
            line (blank lines are skipped) and each is written as a varint-length-prefixed record. \
            Binary output is not written to a terminal: redirect it, use -o FILE, or pass --force. \
            A JSON error names the byte offset and the line and column.
            """
    )

    @Option(name: .long, help: "The fully qualified message type (any message in Schemas/).")
    var type = Frame.protoMessageName

    @Flag(name: .long, help: "One JSON object per line in; varint-length-prefixed records out.")
    var delimited = false

    @Flag(name: .long, help: "Ignore JSON fields the schema does not know instead of failing.")
    var ignoreUnknownFields = false

    @Flag(
        name: .long,
        help: "Encode frames whose min_reader_version is above this schema version (refused by default)."
    )
    var acceptNewerFrames = false

    @Option(name: [.customShort("o"), .long], help: "Write the binary to FILE instead of standard output.")
    var output: String?

    @Flag(name: .long, help: "Write binary to standard output even when it is a terminal.")
    var force = false

    @OptionGroup var input: InputOptions

    func validate() throws {
        guard IMCodecSchema.messageType(named: type) != nil else {
            throw ValidationError("unknown message type '\(type)'; see Schemas/imcodec/v1 for the names")
        }
    }

    /// Whether binary may go to standard output: not to a terminal unless `--force` says so.
    static func mayWriteBinary(toTerminal isTerminal: Bool, force: Bool) -> Bool {
        !isTerminal || force
    }

    func run() throws {
        if output == nil, !Self.mayWriteBinary(toTerminal: isatty(1) != 0, force: force) {
            throw UsageRejected(
                description: "refusing to write binary protobuf to a terminal; "
                    + "redirect standard output, use -o FILE, or pass --force"
            )
        }
        let bytes = try input.read()
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw IMCodecError(code: .invalidJSON, reason: "the input is not UTF-8")
        }
        var options = JSONDecodingOptions()
        options.ignoreUnknownFields = ignoreUnknownFields
        options.acceptsNewerFrames = acceptNewerFrames
        var out: [UInt8] = []
        if delimited {
            var lineStart = 0
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                defer { lineStart += line.utf8.count + 1 }
                if line.allSatisfy({ $0 == " " || $0 == "\t" || $0 == "\r" }) { continue }
                do {
                    let record = try ProtoJSON.binary(fromJSON: String(line), messageType: type, options: options)
                    Delimited.appendRecord(record, to: &out)
                } catch {
                    throw Self.located(error, in: bytes, lineStart: lineStart, lineNumber: number + 1)
                }
            }
        } else {
            do {
                out = try ProtoJSON.binary(fromJSON: text, messageType: type, options: options)
            } catch {
                throw Self.located(error, in: bytes, lineStart: 0, lineNumber: nil)
            }
        }
        if let output {
            try POSIXFile.writeFile(out, path: output)
        } else {
            try POSIXFile.writeAll(out, descriptor: 1, name: "standard output")
        }
    }

    /// `error` with its position: the byte offset in the whole input, the line and the column. An
    /// error raised for one line of `--delimited` input has an offset within that line, which starts
    /// at byte `lineStart` and is line `lineNumber` (`nil` for input that is one JSON document).
    /// The reason names the flag where the library names an option (``FlagHints``).
    static func located(_ error: IMCodecError, in bytes: [UInt8], lineStart: Int, lineNumber: Int?) -> any Error {
        let error = FlagHints.rewrite(error)
        guard let offset = error.offset else {
            guard let lineNumber else { return error }
            return InputRejected(message: "\(error.code): line \(lineNumber): \(error.reason)")
        }
        let position = TextPosition(offset: lineStart + offset, in: bytes)
        return InputRejected(
            message: "\(error.code): \(error.reason) "
                + "(at byte \(lineStart + offset), line \(position.line), column \(position.column))"
        )
    }
}
#endif
