#if Tools
import ArgumentParser
import IMCodec

struct Inspect: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Summarise a binary Frame for people, with any validate() findings.",
        discussion: "Prints the frame kind, conversation, sender, the element chain with sizes, the merger tree and receipts."
    )

    @Flag(name: .long, help: "Input is varint-length-prefixed frames.")
    var delimited = false

    @OptionGroup var input: InputOptions

    func run() throws {
        let bytes = try input.read()
        var frames: [(offset: Int, size: Int, frame: Frame)] = []
        if delimited {
            var records = Delimited.RecordReader(bytes, maxLength: DecodingOptions().maxInputSize)
            while let range = try records.next() {
                do {
                    frames.append((range.lowerBound, range.count, try Frame(serializedBytes: bytes[range])))
                } catch {
                    throw IMCodecError(code: error.code, reason: error.reason, offset: error.offset.map { $0 + range.lowerBound })
                }
            }
        } else {
            frames.append((0, bytes.count, try Frame(serializedBytes: bytes)))
        }
        var text = ""
        for entry in frames {
            text += "\(entry.size) bytes" + (delimited ? " at offset \(entry.offset)" : "") + "\n"
            for line in FrameSummary.lines(entry.frame, indent: "  ") { text += line + "\n" }
            let issues = entry.frame.validate()
            text += issues.isEmpty ? "  validate: ok\n" : "  validate: \(issues.count) issue(s)\n"
            for issue in issues { text += "    - \(issue)\n" }
        }
        writeStandardOutput(text)
    }
}
#endif
