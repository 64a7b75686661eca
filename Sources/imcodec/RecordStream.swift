#if Tools
import ArgumentParser
import Foundation
import IMCodec

/// The decoder's limits as flags, shared by `decode`, `inspect` and `validate`.
struct DecoderFlags: ParsableArguments {
    @Option(name: .long, help: "Largest input (with --delimited, largest record) accepted, in bytes.")
    var maxInputSize = DecodingOptions().maxInputSize

    @Option(name: .long, help: "Deepest message nesting accepted.")
    var maxDepth = DecodingOptions().maxDepth

    @Option(name: .long, help: "Most fields (each occurrence, each packed element) accepted in one frame.")
    var maxFieldCount = DecodingOptions().maxFieldCount

    @Option(
        name: .long,
        help: "Most bytes the decoder may allocate for one frame (default: 16 times its size plus 1 MiB)."
    )
    var maxDecodedMemory: Int?

    @Flag(name: .long, help: "Read frames whose min_reader_version is above this schema version (refused by default).")
    var acceptNewerFrames = false

    /// The library's options these flags set.
    var options: DecodingOptions {
        DecodingOptions(
            maxInputSize: maxInputSize,
            maxDepth: maxDepth,
            maxFieldCount: maxFieldCount,
            maxDecodedMemory: maxDecodedMemory,
            acceptsNewerFrames: acceptNewerFrames
        )
    }
}

/// `--delimited` and `--fail-fast`, shared by `decode`, `inspect` and `validate`.
struct StreamFlags: ParsableArguments {
    @Flag(
        name: .long,
        help: """
            Input is a stream of varint-length-prefixed records (Google's delimited format), each handled \
            on its own: every good record is output, each bad one is reported on standard error.
            """
    )
    var delimited = false

    @Flag(name: .long, help: "With --delimited, stop at the first record that fails (by default every record is read).")
    var failFast = false

    func validate() throws {
        if failFast && !delimited { throw ValidationError("--fail-fast needs --delimited") }
    }

    /// What the help of a command that reads records says about them.
    static let discussion = """
        With --delimited each record is decoded on its own. A record that fails is reported on \
        standard error as "imcodec: record N at byte B: CODE: REASON", N counting records from 1 and B the \
        byte offset of its length prefix in the input (an "(at byte X)" inside the reason is counted from \
        the start of the input too), and the next record is read; --fail-fast stops at the first failure. \
        A length prefix that is bad or cut short, or a record that runs past the end of the input, ends \
        the stream. When any record failed, a last line says how many and the exit status is 1.
        """
}

/// The library's errors as the command line should say them: where a reason names a Swift API
/// (`DecodingOptions.acceptsNewerFrames`, `maxInputSize`, ...) it names the flag that sets it instead.
enum FlagHints {
    /// Each Swift name in the library's reasons, and the flag that replaces it; longest first.
    static let replacements: [(api: String, flag: String)] = [
        ("(DecodingOptions.acceptsNewerFrames decodes it anyway)", "(use --accept-newer-frames to read it anyway)"),
        ("DecodingOptions.acceptsNewerFrames", "--accept-newer-frames"),
        ("acceptsNewerFrames", "--accept-newer-frames"),
        ("maxInputSize", "--max-input-size"),
        ("maxDepth", "--max-depth"),
        ("maxFieldCount", "--max-field-count"),
        ("maxDecodedMemory", "--max-decoded-memory"),
    ]

    /// `text` (an error's reason, a validate() finding) with the flags in place of the Swift names.
    static func rewrite(_ text: String) -> String {
        var text = text
        for (api, flag) in replacements { text = text.replacingOccurrences(of: api, with: flag) }
        return text
    }

    /// `error` with the flags in its reason and its offset moved by `shift` bytes.
    static func rewrite(_ error: IMCodecError, shiftedBy shift: Int = 0) -> IMCodecError {
        IMCodecError(code: error.code, reason: rewrite(error.reason), offset: error.offset.map { $0 + shift })
    }

    /// Runs `body`, rewriting any ``IMCodecError`` it throws.
    static func applying<R>(_ body: () throws -> R) throws -> R {
        do {
            return try body()
        } catch let error as IMCodecError {
            throw rewrite(error)
        }
    }
}

/// Standard output gathered in chunks, so that a long stream is not written one record at a time.
final class OutputBuffer {
    private var bytes: [UInt8] = []

    /// Adds `text`, writing what is gathered once it passes 64 KiB.
    func append(_ text: String) {
        bytes += text.utf8
        if bytes.count > 1 << 16 { flush() }
    }

    /// Writes what is gathered.
    func flush() {
        guard !bytes.isEmpty else { return }
        writeStandardOutput(bytes)
        bytes.removeAll(keepingCapacity: true)
    }
}

/// A delimited stream read record by record with ``Delimited/RecordReader``: a record that fails is
/// reported on standard error with its number and offset, and the stream goes on.
struct RecordStream {
    /// One record of the stream.
    struct Record {
        /// Its position in the stream, counted from 1.
        let number: Int
        /// The byte offset of its length prefix in the input.
        let offset: Int
        /// Its body (the message's bytes), indexed as in the input.
        let body: ArraySlice<UInt8>
    }

    let bytes: [UInt8]
    let maxLength: Int
    let failFast: Bool

    /// Calls `handle` with each record in turn. An error `handle` throws is reported (offsets in an
    /// ``IMCodecError`` are taken as relative to the record) and the next record is read, unless
    /// `failFast`; a bad or truncated length prefix, or a record that runs past the end, ends the stream.
    /// - Parameter flush: Called before each report and at the end, so that standard output comes first.
    /// - Throws: ``InputRejected`` saying how many records failed, when any did.
    func forEach(flush: () -> Void, _ handle: (Record) throws -> Void) throws {
        defer { flush() }
        var reader = Delimited.RecordReader(bytes, maxLength: maxLength)
        var count = 0
        var failed = 0
        while true {
            let offset = reader.offset
            let body: Range<Int>
            do {
                guard let next = try reader.next() else { break }
                body = next
                count += 1
            } catch {
                count += 1
                failed += 1
                flush()
                report(FlagHints.rewrite(error), number: count, offset: offset)
                break
            }
            do {
                try handle(Record(number: count, offset: offset, body: bytes[body]))
            } catch {
                failed += 1
                flush()
                let shifted = (error as? IMCodecError).map { FlagHints.rewrite($0, shiftedBy: body.lowerBound) }
                report(shifted ?? error, number: count, offset: offset)
                if failFast { break }
            }
        }
        guard failed > 0 else { return }
        let stopped = failFast && reader.offset < bytes.count ? "; stopped at the first (--fail-fast)" : ""
        throw InputRejected(message: "\(failed) of \(count) record(s) failed\(stopped)")
    }

    /// Writes `imcodec: record N at byte B: ERROR` on standard error; a first record that fails in
    /// input that looks like JSON says so.
    private func report(_ error: any Error, number: Int, offset: Int) {
        let explained = number == 1 ? BinaryInput.explain(error, for: bytes) : error
        let text = (explained as? InputRejected)?.message ?? "\(explained)"
        FileHandle.standardError.write(Data("imcodec: record \(number) at byte \(offset): \(text)\n".utf8))
    }
}
#endif
