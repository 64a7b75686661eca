#if Tools
import ArgumentParser
import IMCodec

struct Inspect: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Summarise a binary Frame for people, with any validate() findings.",
        discussion: """
            Prints the frame kind, conversation, sender, the element chain with sizes, the merger tree and \
            receipts, then "validate: ok" or each validate() finding. Findings do not change the exit status \
            (use `imcodec validate` for that), except that a frame with no payload exits 1, after saying \
            what is missing. Empty input (0 bytes) exits 1.
            """
    )

    @Flag(name: .long, help: "Input is varint-length-prefixed frames.")
    var delimited = false

    @Flag(name: .long, help: "Inspect frames whose min_reader_version is above this schema version (refused by default).")
    var acceptNewerFrames = false

    @OptionGroup var input: InputOptions

    func run() throws {
        let bytes = try input.readBinary()
        var frames: [(offset: Int, size: Int, frame: Frame)] = []
        let options = DecodingOptions(acceptsNewerFrames: acceptNewerFrames)
        if delimited {
            var records = Delimited.RecordReader(bytes, maxLength: DecodingOptions().maxInputSize)
            while true {
                let next: Range<Int>?
                do {
                    next = try records.next()
                } catch {
                    throw BinaryInput.explain(error, for: bytes)
                }
                guard let range = next else { break }
                do {
                    frames.append((range.lowerBound, range.count, try Frame(serializedBytes: bytes[range], options: options)))
                } catch {
                    throw IMCodecError(
                        code: error.code, reason: error.reason, offset: error.offset.map { $0 + range.lowerBound })
                }
            }
        } else {
            frames.append((0, bytes.count, try BinaryInput.frame(bytes, options: options)))
        }
        var text = ""
        var withoutPayload = 0
        for entry in frames {
            text += "\(entry.size) bytes" + (delimited ? " at offset \(entry.offset)" : "") + "\n"
            for line in FrameSummary.lines(entry.frame, indent: "  ") { text += line + "\n" }
            if entry.frame.payload == nil {
                withoutPayload += 1
                text += "  missing: the payload; a frame carries one of "
                    + Frame.Payload.Kind.allCases.map(\.protoName).joined(separator: ", ") + "\n"
            }
            let issues = entry.frame.validate()
            text += issues.isEmpty ? "  validate: ok\n" : "  validate: \(issues.count) issue(s)\n"
            for issue in issues { text += "    - \(issue)\n" }
        }
        writeStandardOutput(text)
        if withoutPayload > 0 {
            throw InputRejected(message: withoutPayload == 1 && frames.count == 1
                ? "the frame has no payload"
                : "\(withoutPayload) of \(frames.count) frames have no payload")
        }
    }
}
#endif
