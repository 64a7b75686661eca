#if Tools
import ArgumentParser
import IMCodec

struct Validate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check a binary Frame against the product rules; exit 1 and list every violation.",
        discussion: """
            Rules: merger at most 300 messages and 100 nested layers, @ list at most 30 users and only in \
            group conversations, targeted receivers only in groups, files at most 100 MB, locations on \
            Earth, chain rules (merger, group tips, sound, video and file elements stand alone), and rules \
            for every payload kind: a payload at all, receipts, recalls, edits and deletes that name their \
            message and who acted, typing and mark-read events, system notice types, send acks, history \
            pages of 1 to 100 messages with a cursor, stored merger bodies, and the session layer and \
            message features of schema version 2 (logins, sync ranges, presence, reactions, polls, mention \
            ranges, link previews, disappearing and view-once messages). A frame whose encoding the \
            decoder would refuse with the default limits is reported too (notDecodable). The \
            "Limits and Errors" article lists every rule with its source. A frame with no payload exits 1 \
            (missingPayload); empty input (0 bytes) exits 1 too. With --delimited each record that \
            decodes gets a line "record N at byte B: ok" or "record N at byte B: K violation(s)" followed \
            by the violations; a record with violations is reported as failed. A frame that needs a newer \
            reader is a violation (notDecodable) even with --accept-newer-frames, which only lets its other \
            rules be checked.
            """ + "\n" + StreamFlags.discussion
    )

    @OptionGroup var stream: StreamFlags

    @OptionGroup var decoder: DecoderFlags

    @OptionGroup var input: InputOptions

    func run() throws {
        try FlagHints.applying {
            let bytes = try input.readBinary()
            guard stream.delimited else {
                let issues = try BinaryInput.frame(bytes, options: decoder.options).validate()
                writeStandardOutput(issues.isEmpty ? "ok\n" : issues.map { FlagHints.rewrite("\($0)") + "\n" }.joined())
                if !issues.isEmpty { throw InputRejected(message: "\(issues.count) product rule violation(s)") }
                return
            }
            let out = OutputBuffer()
            let options = decoder.options
            let records = RecordStream(bytes: bytes, maxLength: decoder.maxInputSize, failFast: stream.failFast)
            try records.forEach(flush: out.flush) { record in
                let issues = try Frame(serializedBytes: record.body, options: options).validate()
                out.append(
                    "record \(record.number) at byte \(record.offset): "
                        + (issues.isEmpty ? "ok\n" : "\(issues.count) violation(s)\n")
                )
                for issue in issues { out.append("  " + FlagHints.rewrite("\(issue)") + "\n") }
                if !issues.isEmpty { throw InputRejected(message: "\(issues.count) product rule violation(s)") }
            }
        }
    }
}
#endif
