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
            (missingPayload); empty input (0 bytes) exits 1 too.
            """
    )

    @OptionGroup var input: InputOptions

    func run() throws {
        let frame = try BinaryInput.frame(try input.readBinary())
        let issues = frame.validate()
        if issues.isEmpty {
            writeStandardOutput("ok\n")
            return
        }
        writeStandardOutput(issues.map { "\($0)\n" }.joined())
        throw InputRejected(message: "\(issues.count) product rule violation(s)")
    }
}
#endif
