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
            what is missing. Empty input (0 bytes) exits 1. With --delimited each good record is \
            summarised under a line "record N: S bytes at offset B"; a record without a payload is \
            summarised and also reported as failed.
            """ + "\n" + StreamFlags.discussion
    )

    @OptionGroup var stream: StreamFlags

    @OptionGroup var decoder: DecoderFlags

    @OptionGroup var input: InputOptions

    func run() throws {
        try FlagHints.applying {
            let bytes = try input.readBinary()
            guard stream.delimited else {
                let frame = try BinaryInput.frame(bytes, options: decoder.options)
                writeStandardOutput("\(bytes.count) bytes\n" + Self.summary(frame))
                if frame.payload == nil { throw InputRejected(message: "the frame has no payload") }
                return
            }
            let out = OutputBuffer()
            let options = decoder.options
            let records = RecordStream(bytes: bytes, maxLength: decoder.maxInputSize, failFast: stream.failFast)
            try records.forEach(flush: out.flush) { record in
                let frame = try Frame(serializedBytes: record.body, options: options)
                out.append("record \(record.number): \(record.body.count) bytes at offset \(record.offset)\n")
                out.append(Self.summary(frame))
                if frame.payload == nil { throw InputRejected(message: "the frame has no payload") }
            }
        }
    }

    /// `frame` for people: ``FrameSummary``'s lines, what is missing, and the validate() findings.
    static func summary(_ frame: Frame) -> String {
        var text = ""
        for line in FrameSummary.lines(frame, indent: "  ") { text += line + "\n" }
        if frame.payload == nil {
            text +=
                "  missing: the payload; a frame carries one of "
                + Frame.Payload.Kind.allCases.map(\.protoName).joined(separator: ", ") + "\n"
        }
        let issues = frame.validate()
        text += issues.isEmpty ? "  validate: ok\n" : "  validate: \(issues.count) issue(s)\n"
        for issue in issues { text += "    - \(FlagHints.rewrite("\(issue)"))\n" }
        return text
    }
}
#endif
