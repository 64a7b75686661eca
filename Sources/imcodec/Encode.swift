#if Tools
import ArgumentParser
import IMCodec

struct Encode: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Read proto3 JSON and write canonical binary protobuf.",
        discussion: """
            Without --delimited the input is one JSON object. With --delimited it is one JSON object per \
            line (blank lines are skipped) and each is written as a varint-length-prefixed record.
            """
    )

    @Option(name: .long, help: "The fully qualified message type (any message in Schemas/).")
    var type = Frame.protoMessageName

    @Flag(name: .long, help: "One JSON object per line in; varint-length-prefixed records out.")
    var delimited = false

    @Flag(name: .long, help: "Ignore JSON fields the schema does not know instead of failing.")
    var ignoreUnknownFields = false

    @OptionGroup var input: InputOptions

    func validate() throws {
        guard IMCodecSchema.messageType(named: type) != nil else {
            throw ValidationError("unknown message type '\(type)'; see Schemas/imcodec/v1 for the names")
        }
    }

    func run() throws {
        let bytes = try input.read()
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw IMCodecError(code: .invalidJSON, reason: "the input is not UTF-8")
        }
        var options = JSONDecodingOptions()
        options.ignoreUnknownFields = ignoreUnknownFields
        guard delimited else {
            writeStandardOutput(try ProtoJSON.binary(fromJSON: text, messageType: type, options: options))
            return
        }
        var out: [UInt8] = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if line.allSatisfy({ $0 == " " || $0 == "\t" || $0 == "\r" }) { continue }
            do {
                let record = try ProtoJSON.binary(fromJSON: String(line), messageType: type, options: options)
                Delimited.appendRecord(record, to: &out)
            } catch {
                throw IMCodecError(code: error.code, reason: "line \(number + 1): \(error.reason)", offset: error.offset)
            }
        }
        writeStandardOutput(out)
    }
}
#endif
