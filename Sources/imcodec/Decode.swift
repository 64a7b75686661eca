#if Tools
import ArgumentParser
import IMCodec

struct Decode: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Read binary protobuf and print proto3 JSON.",
        discussion: """
            Without --delimited the input is one message and the JSON is indented. With --delimited the \
            input is a stream of varint-length-prefixed records (Google's delimited format) and each good \
            record is printed as one compact JSON object per line. Empty input (0 bytes) is bad input \
            unless --allow-empty is given (it is a valid, empty message, which is rarely what was meant); \
            input that looks like JSON is refused with a pointer to `imcodec encode`.
            """ + "\n" + StreamFlags.discussion
    )

    @Option(name: .long, help: "The fully qualified message type (any message in Schemas/).")
    var type = Frame.protoMessageName

    @OptionGroup var stream: StreamFlags

    @Flag(name: .long, help: "Decode and print nothing: only the exit status and, on failure, the error lines.")
    var quiet = false

    @Flag(name: .long, help: "Accept empty input (0 bytes) as the empty message instead of failing.")
    var allowEmpty = false

    @OptionGroup var decoder: DecoderFlags

    @OptionGroup var input: InputOptions

    func validate() throws {
        guard IMCodecSchema.messageType(named: type) != nil else {
            throw ValidationError("unknown message type '\(type)'; see Schemas/imcodec/v1 for the names")
        }
    }

    func run() throws {
        try FlagHints.applying {
            let bytes = allowEmpty ? try input.read() : try input.readBinary()
            if stream.delimited {
                try decodeRecords(bytes)
            } else {
                try decodeOne(bytes)
            }
        }
    }

    /// Prints the one message `bytes` holds as indented JSON.
    private func decodeOne(_ bytes: [UInt8]) throws {
        var json = JSONEncodingOptions()
        json.prettyPrinted = true
        let text: String
        do {
            text = try ProtoJSON.jsonString(
                fromBinary: bytes,
                messageType: type,
                decoding: decoder.options,
                options: json
            )
        } catch {
            throw BinaryInput.explain(FlagHints.rewrite(error), for: bytes)
        }
        if !quiet { writeStandardOutput(text + "\n") }
    }

    /// Prints each good record of the stream `bytes` as one line of JSON.
    private func decodeRecords(_ bytes: [UInt8]) throws {
        let out = OutputBuffer()
        let options = decoder.options
        let records = RecordStream(bytes: bytes, maxLength: decoder.maxInputSize, failFast: stream.failFast)
        try records.forEach(flush: out.flush) { record in
            let text = try ProtoJSON.jsonString(
                fromBinary: Array(record.body),
                messageType: type,
                decoding: options,
                options: JSONEncodingOptions()
            )
            if !quiet { out.append(text + "\n") }
        }
    }
}
#endif
