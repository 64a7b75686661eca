#if Tools
import ArgumentParser
import IMCodec

struct Decode: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Read binary protobuf and print proto3 JSON.",
        discussion: """
            Without --delimited the input is one message and the JSON is indented. With --delimited the \
            input is a stream of varint-length-prefixed records (Google's delimited format) and each \
            record is printed as one compact JSON object per line. Empty input (0 bytes) is bad input \
            unless --allow-empty is given (it is a valid, empty message, which is rarely what was meant); \
            input that looks like JSON is refused with a pointer to `imcodec encode`.
            """
    )

    @Option(name: .long, help: "The fully qualified message type (any message in Schemas/).")
    var type = Frame.protoMessageName

    @Flag(name: .long, help: "Input is varint-length-prefixed records; output is one JSON object per line.")
    var delimited = false

    @Flag(name: .long, help: "Decode and print nothing: only the exit status and, on failure, the error line.")
    var quiet = false

    @Flag(name: .long, help: "Accept empty input (0 bytes) as the empty message instead of failing.")
    var allowEmpty = false

    @Option(name: .long, help: "Largest input (or record) accepted, in bytes.")
    var maxInputSize = DecodingOptions().maxInputSize

    @Option(name: .long, help: "Deepest message nesting accepted.")
    var maxDepth = DecodingOptions().maxDepth

    @Flag(name: .long, help: "Decode frames whose min_reader_version is above this schema version (refused by default).")
    var acceptNewerFrames = false

    @OptionGroup var input: InputOptions

    func validate() throws {
        guard IMCodecSchema.messageType(named: type) != nil else {
            throw ValidationError("unknown message type '\(type)'; see Schemas/imcodec/v1 for the names")
        }
    }

    func run() throws {
        let bytes = allowEmpty ? try input.read() : try input.readBinary()
        let options = DecodingOptions(maxInputSize: maxInputSize, maxDepth: maxDepth, acceptsNewerFrames: acceptNewerFrames)
        var json = JSONEncodingOptions()
        guard delimited else {
            json.prettyPrinted = true
            let text: String
            do {
                text = try ProtoJSON.jsonString(fromBinary: bytes, messageType: type, decoding: options, options: json)
            } catch {
                throw BinaryInput.explain(error, for: bytes)
            }
            if !quiet { writeStandardOutput(text + "\n") }
            return
        }
        var records = Delimited.RecordReader(bytes, maxLength: maxInputSize)
        var out: [UInt8] = []
        while true {
            let next: Range<Int>?
            do {
                next = try records.next()
            } catch {
                throw BinaryInput.explain(error, for: bytes)
            }
            guard let range = next else { break }
            do {
                let text = try ProtoJSON.jsonString(
                    fromBinary: Array(bytes[range]), messageType: type, decoding: options, options: json)
                if !quiet { out += Array(text.utf8); out.append(0x0A) }
            } catch {
                let offset = error.offset.map { $0 + range.lowerBound }
                throw BinaryInput.explain(IMCodecError(code: error.code, reason: error.reason, offset: offset), for: bytes)
            }
            if out.count > 1 << 16 { writeStandardOutput(out); out.removeAll(keepingCapacity: true) }
        }
        writeStandardOutput(out)
    }
}
#endif
