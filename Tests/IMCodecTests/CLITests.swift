import Foundation
import IMCodec
import Testing

#if Tools  // the imcodec tool is built with the Tools trait (Package.swift)
@Suite("The imcodec command-line tool")
struct CLITests {
    @Test(
        "decode prints each valid fixture's JSON; encode of that JSON gives its bytes",
        arguments: FixtureFiles.validNames
    )
    func fixtureThroughExecutable(name: String) throws {
        let binpb = FixtureFiles.valid.appendingPathComponent(name + ".binpb")
        let jsonURL = FixtureFiles.valid.appendingPathComponent(name + ".json")
        // Empty input is refused unless --allow-empty says it is meant (emptyInputIsNotSuccess).
        let empty = try FixtureFiles.bytes(binpb).isEmpty
        let decoded = try CLI.run(["decode"] + (empty ? ["--allow-empty"] : []) + [binpb.path])
        #expect(decoded.status == 0, "\(decoded.stderr)")
        let expected = try String(contentsOf: jsonURL, encoding: .utf8)
        #expect(try FixtureJSON.parse(decoded.text) == FixtureJSON.parse(expected))

        guard FixtureFiles.validCases[name]?.json_roundtrip == true else { return }
        let encoded = try CLI.run(["encode", jsonURL.path])
        #expect(encoded.status == 0, "\(encoded.stderr)")
        #expect(encoded.stdout == (try FixtureFiles.bytes(binpb)))
        // Standard input works the same as a file.
        #expect(try CLI.run(["encode"], input: Array(expected.utf8)).stdout == encoded.stdout)
    }

    @Test(
        "decode of each invalid fixture exits 1 with one error line: code, reason, offset",
        arguments: FixtureFiles.invalidNames
    )
    func invalidThroughExecutable(file: String) throws {
        let testCase = try #require(FixtureFiles.invalidCases[file])
        var arguments = ["decode", FixtureFiles.invalid.appendingPathComponent(file).path]
        if let size = testCase.options["maxInputSize"] { arguments += ["--max-input-size", String(size)] }
        if let depth = testCase.options["maxDepth"] { arguments += ["--max-depth", String(depth)] }
        let result = try CLI.run(arguments)
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1)
        #expect(result.stderr.hasPrefix("imcodec: \(testCase.code): "), "\(result.stderr)")
        if let offset = testCase.offset {
            #expect(result.stderr.contains("(at byte \(offset))"), "\(result.stderr)")
        }
    }

    @Test("--delimited: one JSON object per line in and out")
    func delimited() throws {
        let names = ["element_text", "receipt_batch", "merger_nested_3_levels", "event_recall"]
        var lines = ""
        var stream: [UInt8] = []
        for name in names {
            let bytes = try FixtureFiles.bytes(FixtureFiles.valid.appendingPathComponent(name + ".binpb"))
            Delimited.appendRecord(bytes, to: &stream)
            lines += try Frame(serializedBytes: bytes).jsonString() + "\n"
        }
        let decoded = try CLI.run(["decode", "--delimited"], input: stream)
        #expect(decoded.status == 0)
        #expect(decoded.text == lines)
        let encoded = try CLI.run(["encode", "--delimited"], input: Array(lines.utf8))
        #expect(encoded.stdout == stream)
        // A record cut short is bad input, with its number and the offset in the whole stream; the
        // records before it are printed.
        let cut = try CLI.run(["decode", "--delimited"], input: Array(stream.dropLast()))
        #expect(cut.status == 1)
        #expect(cut.text == lines.split(separator: "\n").dropLast().map { $0 + "\n" }.joined())
        #expect(cut.stderr.hasPrefix("imcodec: record 4 at byte "), "\(cut.stderr)")
        #expect(cut.stderr.contains(": truncated: "), "\(cut.stderr)")
    }

    @Test("--type decodes and encodes any schema message")
    func otherTypes() throws {
        let message = Message.c2cText(from: "alice", to: "bob", "hi", clientMsgID: "c-1")
        let decoded = try CLI.run(["decode", "--type", "imcodec.v1.Message"], input: message.serializedBytes())
        #expect(decoded.status == 0)
        #expect(try Message(jsonString: decoded.text) == message)
        let encoded = try CLI.run(["encode", "--type", "imcodec.v1.Message"], input: Array(decoded.text.utf8))
        #expect(encoded.stdout == message.serializedBytes())
    }

    @Test("--quiet decodes and prints nothing")
    func quiet() throws {
        let ok = try CLI.run(["decode", "--quiet"], input: Samples.frames["message-merger"]!.serializedBytes())
        #expect(ok.status == 0 && ok.stdout.isEmpty && ok.stderr.isEmpty)
        let bad = try CLI.run(["decode", "--quiet"], input: [0x52, 0x05])
        #expect(bad.status == 1 && bad.stdout.isEmpty && bad.stderr.hasPrefix("imcodec: truncated"))
    }

    @Test("usage errors exit 2; help exits 0")
    func usage() throws {
        #expect(try CLI.run(["decode", "--type", "imcodec.v1.Nope"]).status == 2)
        #expect(try CLI.run(["frobnicate"]).status == 2)
        #expect(try CLI.run(["decode", "--no-such-option"]).status == 2)
        let help = try CLI.run(["--help"])
        #expect(help.status == 0)
        #expect(help.text.contains("decode") && help.text.contains("demo"))
        #expect(try CLI.run(["decode", "/no/such/file"]).status == 1)
    }

    @Test("help with a topic that names no subcommand is a usage error (exit 2), in both tools")
    func unknownHelpTopic() throws {
        let bogus = try CLI.run(["help", "bogus"])
        #expect(bogus.status == 2)
        #expect(bogus.stdout.isEmpty)
        #expect(
            bogus.stderr.hasPrefix("imcodec: unknown help topic 'bogus'; the topics are: demo, decode,"),
            "\(bogus.stderr)"
        )
        #expect(try CLI.run(["help", "decode", "bogus"]).status == 2)
        let decode = try CLI.run(["help", "decode"])
        #expect(decode.status == 0 && decode.text.contains("--delimited") && decode.text.contains("--fail-fast"))
        #expect(try CLI.run(["help"]).status == 0)
        let relay = try CLI.run(["help", "bogus"], executable: try CLI.relay())
        #expect(relay.status == 2)
        #expect(relay.stderr.hasPrefix("imcodec-relay: unknown help topic 'bogus'"), "\(relay.stderr)")
        #expect(try CLI.run(["help", "serve"], executable: try CLI.relay()).status == 0)
    }

    @Test("both tools have --version and document the same exit codes in their help and READMEs")
    func sameExitCodesAndVersion() throws {
        let relayVersion = try CLI.run(["--version"], executable: try CLI.relay())
        #expect(relayVersion.status == 0)
        #expect(relayVersion.text.hasPrefix("imcodec-relay \(IMCodecRelease.version) ("), "\(relayVersion.text)")
        #expect(try CLI.run(["--version"]).text.hasPrefix("imcodec \(IMCodecRelease.version) ("))
        func flat(_ text: String) -> String { text.split(whereSeparator: \.isWhitespace).joined(separator: " ") }
        let start = "Exit status: 0 success, 1 failure ("
        let usage = "2 usage (an unknown command, option or help topic, or a bad option value)."
        let imcodecHelp = flat(try CLI.run(["--help"]).text)
        let relayHelp = flat(try CLI.run(["--help"], executable: try CLI.relay()).text)
        for help in [imcodecHelp, relayHelp] {
            #expect(help.contains(start) && help.contains(usage), "\(help)")
        }
        let readme = flat(try String(contentsOf: Protoc.root.appendingPathComponent("README.md"), encoding: .utf8))
        let relayReadme = flat(
            try String(
                contentsOf: Protoc.root.appendingPathComponent("Sources/imcodec-relay/README.md"),
                encoding: .utf8
            )
        )
        for text in [readme, relayReadme] {
            #expect(text.contains("0 success, 1 failure (") && text.contains(usage))
        }
        // Usage errors exit 2 in both.
        #expect(try CLI.run(["--no-such-option"], executable: try CLI.relay()).status == 2)
        #expect(try CLI.run(["--no-such-option"]).status == 2)
    }

    @Test("inspect summarises a frame and its validate() findings")
    func inspect() throws {
        let bytes = try FixtureFiles.bytes(FixtureFiles.valid.appendingPathComponent("merger_nested_3_levels.binpb"))
        let result = try CLI.run(["inspect"], input: bytes)
        #expect(result.status == 0)
        #expect(result.text.contains("frame: message"))
        #expect(result.text.contains("merger"))
        #expect(result.text.contains("validate:"))
    }

    @Test("validate exits 0 for a good frame and 1 with every violation for a bad one")
    func validate() throws {
        let good = try CLI.run(["validate"], input: Frame(Message.c2cText(from: "a", to: "b", "hi")).serializedBytes())
        #expect(good.status == 0 && good.text == "ok\n")
        var bad = Message.c2cText(from: "a", to: "b", "hi")
        bad.at = AtInfo.with { $0.atAll = true }
        bad.elements.append(.file(uuid: "f", name: "big.iso", size: 200_000_000, url: "u"))
        bad.elements.append(.face(index: 1))
        let result = try CLI.run(["validate"], input: Frame(bad).serializedBytes())
        #expect(result.status == 1)
        #expect(result.text.contains("atOutsideGroup"))
        #expect(result.text.contains("fileTooLarge"))
        #expect(result.text.contains("elementMustBeAlone"))
    }

    @Test("demo writes, reads back and checks every message kind")
    func demo() throws {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent(
            "imcodec-demo-test-\(UUID().uuidString)"
        )
        defer { try? FileManager.default.removeItem(at: output) }
        let result = try CLI.run(["demo", "--output", output.path])
        #expect(result.status == 0, "\(result.stderr)")
        let text = result.text
        for expected in [
            ".user(\"bob\") from alice", "@ alice, @carol", "image png", "elements (4)", "merger \"Launch thread\"",
            "merger \"Staging test\"", "read receipt", "2 read, 1 unread", "recall of", "edit of",
            "ack for a-0001: accepted", "rejected with 80001",
            "every frame decodes equal to what was encoded",
        ] {
            #expect(text.contains(expected), "demo transcript lacks \(expected)")
        }
        #expect(!text.contains("DIFFERS"))
        for expected in [
            "login of bob", "resumes from group team-apollo seq 5001", "newest group team-apollo seq 5003",
            "sync page of group team-apollo: 2 message(s), complete", "bob is online", "carol reacted 🎉",
            "in the thread of message group-apollo-5001", "poll \"Launch dinner?\"", "bob voted 1",
            "poll poll-launch closed", "bob is away", "refused as it must be: unsupportedVersion",
            "the frame for a schema-4 reader was refused", "call call-launch", "call log call-launch",
            "encrypted (AES-256-GCM)",
        ] {
            #expect(text.contains(expected), "demo transcript lacks \(expected)")
        }
        let written = try FixtureFiles.bytes(output)
        // 35 frames a version-3 reader acts on, and the last one, which needs a schema-4 reader.
        var reader = Delimited.Reader<Frame>(written)
        var count = 0
        do {
            while try reader.next() != nil { count += 1 }
            Issue.record("the demo's last frame decoded without acceptsNewerFrames")
        } catch {
            #expect(error.code == .unsupportedVersion)
        }
        #expect(count == 35)
        var lenient = Delimited.Reader<Frame>(written, options: DecodingOptions(acceptsNewerFrames: true))
        count = 0
        while try lenient.next() != nil { count += 1 }
        #expect(count == 36)
    }

    @Test("--version prints the library's version and the schema's")
    func version() throws {
        let result = try CLI.run(["--version"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.text == "imcodec \(IMCodecRelease.version) (IMCodec \(IMCodecRelease.version), "
                + "schema imcodec.v1, schema_version \(Frame.currentSchemaVersion))\n"
        )
        #expect(IMCodecRelease.schemaVersion == Frame(Message()).schemaVersion)
    }

    @Test("empty input (0 bytes) exits 1 for decode, validate and inspect; decode --allow-empty accepts it")
    func emptyInputIsNotSuccess() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("imcodec-empty-\(UUID().uuidString)")
        try Data().write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        for command in ["decode", "validate", "inspect"] {
            for arguments in [[command, file.path], [command]] {
                let result = try CLI.run(arguments)
                #expect(result.status == 1, "\(arguments)")
                #expect(result.stdout.isEmpty, "\(arguments): \(result.text)")
                #expect(result.stderr.split(separator: "\n").count == 1)
                #expect(result.stderr.hasPrefix("imcodec: empty input: "), "\(arguments): \(result.stderr)")
                #expect(result.stderr.contains(arguments.count == 2 ? file.path : "standard input"))
            }
        }
        let allowed = try CLI.run(["decode", "--allow-empty", file.path])
        #expect(allowed.status == 0 && allowed.text == "{}\n")
        // Empty JSON is not a JSON object either.
        let encoded = try CLI.run(["encode", file.path])
        #expect(encoded.status == 1 && encoded.stderr.hasPrefix("imcodec: invalidJSON: "), "\(encoded.stderr)")
    }

    @Test("a frame with no payload: validate exits 1 with missingPayload; inspect says what is missing and exits 1")
    func frameWithoutPayload() throws {
        let versionsOnly = Frame.with {
            $0.schemaVersion = 1; $0.minReaderVersion = 1
        }.serializedBytes()
        let validate = try CLI.run(["validate"], input: versionsOnly)
        #expect(validate.status == 1)
        #expect(validate.text.contains("[missingPayload]"), "\(validate.text)")
        #expect(!validate.text.contains("ok"))
        let inspect = try CLI.run(["inspect"], input: versionsOnly)
        #expect(inspect.status == 1)
        #expect(inspect.text.contains("frame: no payload"), "\(inspect.text)")
        #expect(inspect.text.contains("missing: the payload; a frame carries one of message, receipt,"))
        #expect(inspect.text.contains("[missingPayload]"))
        #expect(!inspect.text.contains("validate: ok"))
        #expect(inspect.stderr == "imcodec: the frame has no payload\n")
        // In a stream, inspect shows every frame and counts those without a payload.
        // One message value for the stream and the offset: a new one would have another random id
        // and random number, whose varints can differ in length.
        let first = Frame(Message.c2cText(from: "a", to: "b", "hi"))
        var stream: [UInt8] = []
        Delimited.appendRecord(first.serializedBytes(), to: &stream)
        Delimited.appendRecord(versionsOnly, to: &stream)
        let delimited = try CLI.run(["inspect", "--delimited"], input: stream)
        #expect(delimited.status == 1)
        #expect(delimited.text.contains("validate: ok") && delimited.text.contains("missing: the payload"))
        let second = Delimited.serialize([first]).count
        #expect(
            delimited.stderr == "imcodec: record 2 at byte \(second): the frame has no payload\n"
                + "imcodec: 1 of 2 record(s) failed\n",
            "\(delimited.stderr)"
        )
    }

    @Test("decode, validate and inspect of JSON say it looks like JSON and suggest imcodec encode")
    func jsonGivenToDecode() throws {
        let json = FixtureFiles.valid.appendingPathComponent("element_image.json")
        for arguments in [["decode", json.path], ["validate", json.path], ["inspect", json.path]] {
            let result = try CLI.run(arguments)
            #expect(result.status == 1, "\(arguments)")
            #expect(result.stderr.split(separator: "\n").count == 1)
            #expect(
                result.stderr.contains("looks like JSON") && result.stderr.contains("imcodec encode"),
                "\(arguments): \(result.stderr)"
            )
        }
        // White space before the brace, and --delimited, too.
        let spaced = try CLI.run(["decode"], input: Array(" \n\t{\"message\": {}}".utf8))
        #expect(spaced.status == 1 && spaced.stderr.contains("looks like JSON"), "\(spaced.stderr)")
        let delimited = try CLI.run(["decode", "--delimited"], input: Array("{\"message\": {}}\n".utf8))
        #expect(delimited.status == 1 && delimited.stderr.contains("looks like JSON"), "\(delimited.stderr)")
        // Binary that is not JSON gets the decoder's own error.
        let binary = try CLI.run(["decode"], input: [0x52, 0x05])
        #expect(binary.status == 1 && binary.stderr.hasPrefix("imcodec: truncated: "))
        #expect(!binary.stderr.contains("JSON"))
    }

    @Test("io errors say why: no such file, a directory, not a directory, an unwritable output")
    func ioErrorsCarryTheReason() throws {
        let missing = try CLI.run(["decode", "/no/such/file.binpb"])
        #expect(missing.status == 1)
        #expect(missing.stderr == "imcodec: io: cannot read /no/such/file.binpb: no such file or directory\n")
        let directory = try CLI.run(["validate", FixtureFiles.valid.path])
        #expect(directory.status == 1)
        #expect(directory.stderr == "imcodec: io: cannot read \(FixtureFiles.valid.path): is a directory\n")
        let file = FixtureFiles.valid.appendingPathComponent("element_text.binpb").path
        let notDirectory = try CLI.run(["inspect", file + "/x"])
        #expect(notDirectory.status == 1)
        #expect(notDirectory.stderr == "imcodec: io: cannot read \(file)/x: not a directory\n")
        let json = FixtureFiles.valid.appendingPathComponent("element_text.json").path
        let output = try CLI.run(["encode", json, "-o", "/no/such/folder/out.binpb"])
        #expect(output.status == 1)
        #expect(output.stderr == "imcodec: io: cannot write /no/such/folder/out.binpb: no such file or directory\n")
    }

    @Test("encode refuses to write binary to a terminal (exit 2) unless --force or -o FILE")
    func encodeRefusesATerminal() throws {
        let json = FixtureFiles.valid.appendingPathComponent("element_text.json").path
        let expected = try FixtureFiles.bytes(FixtureFiles.valid.appendingPathComponent("element_text.binpb"))
        // `script` (util-linux) runs the command with its standard output on a pseudo-terminal.
        let refused = try CLI.shell("script -q -e -c \"$BIN/imcodec encode \(json)\" /dev/null")
        #expect(refused.status == 2)
        #expect(
            refused.text.contains(
                "imcodec: refusing to write binary protobuf to a terminal; redirect standard output, use -o FILE, "
                    + "or pass --force"
            ),
            "\(refused.text)"
        )
        let forced = try CLI.shell("script -q -e -c \"$BIN/imcodec encode --force \(json)\" /dev/null >/dev/null")
        #expect(forced.status == 0, "\(forced.stderr)")
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("imcodec-o-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: out) }
        let toFile = try CLI.shell("script -q -e -c \"$BIN/imcodec encode -o \(out.path) \(json)\" /dev/null")
        #expect(toFile.status == 0, "\(toFile.text)")
        #expect(try FixtureFiles.bytes(out) == expected)
        // A pipe or a file is not a terminal: no flag needed.
        #expect(try CLI.run(["encode", json]).stdout == expected)
    }

    @Test("JSON errors give the byte offset, the line and the column")
    func jsonErrorsGiveLineAndColumn() throws {
        let text = "{\n  \"message\": {\n    \"senderId\": 5\n  }\n}\n"
        let result = try CLI.run(["encode"], input: Array(text.utf8))
        #expect(result.status == 1)
        #expect(result.stderr.hasPrefix("imcodec: invalidJSON: "))
        #expect(result.stderr.hasSuffix(" (at byte 33, line 3, column 17)\n"), "\(result.stderr)")
        // Columns count characters, not bytes: "é" and "🙂" are one column each.
        let wide = "{\"message\": {\"clientMsgId\": \"é🙂\", \"seq\": true}}"
        let offset = wide.utf8.count - "true}}".utf8.count
        let column = wide.unicodeScalars.count - "true}}".unicodeScalars.count + 1
        #expect(column == offset - 3)  // é is two bytes, 🙂 four; columns start at 1
        let widened = try CLI.run(["encode"], input: Array(wide.utf8))
        #expect(widened.stderr.hasSuffix(" (at byte \(offset), line 1, column \(column))\n"), "\(widened.stderr)")
        // --delimited: the line of the stream, and the offset in the whole stream.
        let lines = "{\"message\": {}}\n\n{\"message\": {\"seq\": true}}\n"
        let delimited = try CLI.run(["encode", "--delimited"], input: Array(lines.utf8))
        let at = lines.utf8.count - "true}}\n".utf8.count
        #expect(delimited.status == 1)
        #expect(delimited.stderr.hasSuffix(" (at byte \(at), line 3, column 21)\n"), "\(delimited.stderr)")
    }

    @Test(
        "--delimited on the demo's file: 35 records out, record 36 reported with its offset and flag, exit 1",
        arguments: ["decode", "inspect", "validate"]
    )
    func demoFileRecordByRecord(command: String) throws {
        let demo = try DemoFile()
        defer { demo.remove() }
        let result = try CLI.run([command, "--delimited", demo.url.path])
        #expect(result.status == 1)
        #expect(Self.goodRecords(result.text, command: command) == 35, "\(result.text)")
        let lines = result.stderr.split(separator: "\n").map(String.init)
        #expect(lines.count == 2, "\(result.stderr)")
        #expect(
            lines.first?.hasPrefix("imcodec: record 36 at byte \(demo.offsets[35]): unsupportedVersion: ") == true,
            "\(result.stderr)"
        )
        #expect(lines.first?.hasSuffix("(use --accept-newer-frames to read it anyway)") == true, "\(result.stderr)")
        #expect(!result.stderr.contains("DecodingOptions") && !result.stderr.contains("acceptsNewerFrames"))
        #expect(lines.last == "imcodec: 1 of 36 record(s) failed")
        if command == "decode" {
            let json = try demo.records.prefix(35).map { try Frame(serializedBytes: $0).jsonString() + "\n" }.joined()
            #expect(result.text == json)
        }
        let newer = try CLI.run([command, "--delimited", "--accept-newer-frames", demo.url.path])
        guard command == "validate" else {
            #expect(newer.status == 0 && newer.stderr.isEmpty, "\(newer.stderr)")
            #expect(Self.goodRecords(newer.text, command: command) == 36)
            return
        }
        // validate reads it, and still finds that the default options refuse it (notDecodable).
        #expect(newer.status == 1)
        #expect(Self.goodRecords(newer.text, command: command) == 35)
        #expect(newer.text.contains("record 36 at byte \(demo.offsets[35]): 1 violation(s)\n"), "\(newer.text)")
        #expect(newer.text.contains("(use --accept-newer-frames to read it anyway)) [notDecodable]"), "\(newer.text)")
        #expect(!newer.text.contains("DecodingOptions"))
        #expect(
            newer.stderr == "imcodec: record 36 at byte \(demo.offsets[35]): 1 product rule violation(s)\n"
                + "imcodec: 1 of 36 record(s) failed\n",
            "\(newer.stderr)"
        )
    }

    @Test(
        "--delimited: a bad record is reported by number and offset, the next is read; --fail-fast stops",
        arguments: ["decode", "inspect", "validate"]
    )
    func badRecordInTheMiddle(command: String) throws {
        let good = Frame(Message.c2cText(from: "alice", to: "bob", "hi")).serializedBytes()
        let bad: [UInt8] = [0x52, 0x05]  // field 10, 5 bytes announced, none there
        var stream: [UInt8] = []
        Delimited.appendRecord(good, to: &stream)
        let second = stream.count
        Delimited.appendRecord(bad, to: &stream)
        let third = stream.count
        Delimited.appendRecord(good, to: &stream)
        let inner = try #require(#expect(throws: IMCodecError.self) { try Frame(serializedBytes: bad) })
        let at = try #require(inner.offset) + second + 1  // after the record's 1-byte prefix
        let result = try CLI.run([command, "--delimited"], input: stream)
        #expect(result.status == 1)
        #expect(Self.goodRecords(result.text, command: command) == 2, "\(result.text)")
        #expect(
            result.stderr == "imcodec: record 2 at byte \(second): \(inner.code): \(inner.reason) (at byte \(at))\n"
                + "imcodec: 1 of 3 record(s) failed\n",
            "\(result.stderr)"
        )
        if command != "decode" {
            #expect(result.text.contains("record 3") && result.text.contains("\(third)"))
            #expect(!result.text.contains("record 2"))
        }
        let fast = try CLI.run([command, "--delimited", "--fail-fast"], input: stream)
        #expect(fast.status == 1)
        #expect(Self.goodRecords(fast.text, command: command) == 1, "\(fast.text)")
        #expect(
            fast.stderr.hasSuffix("imcodec: 1 of 2 record(s) failed; stopped at the first (--fail-fast)\n"),
            "\(fast.stderr)"
        )
        // --fail-fast means nothing without --delimited: a usage error.
        #expect(try CLI.run([command, "--fail-fast"], input: good).status == 2)
    }

    @Test("--delimited: a length prefix cut short ends the stream after the good records, with its number and offset")
    func streamEndsInsideALengthPrefix() throws {
        let good = Frame(Message.c2cText(from: "alice", to: "bob", "hi")).serializedBytes()
        var stream: [UInt8] = []
        Delimited.appendRecord(good, to: &stream)
        stream.append(0x80)
        let result = try CLI.run(["decode", "--delimited"], input: stream)
        #expect(result.status == 1)
        #expect(result.text == (try Frame(serializedBytes: good).jsonString()) + "\n")
        let end = stream.count - 1
        #expect(
            result.stderr == "imcodec: record 2 at byte \(end): truncated: the input ends inside a length prefix "
                + "(at byte \(end))\nimcodec: 1 of 2 record(s) failed\n",
            "\(result.stderr)"
        )
    }

    @Test("hints name the CLI's flags, never a Swift API")
    func hintsNameFlags() throws {
        let bytes = try FixtureFiles.bytes(FixtureFiles.valid.appendingPathComponent("merger_nested_3_levels.binpb"))
        let cases: [(arguments: [String], flag: String)] = [
            (["decode", "--max-input-size", "10"], "--max-input-size"),
            (["inspect", "--max-depth", "3"], "--max-depth"),
            (["validate", "--max-field-count", "3"], "--max-field-count"),
            (["decode", "--delimited", "--max-depth", "3"], "--max-depth"),
        ]
        for (arguments, flag) in cases {
            var input = bytes
            if arguments.contains("--delimited") { input = []; Delimited.appendRecord(bytes, to: &input) }
            let result = try CLI.run(arguments, input: input)
            #expect(result.status == 1, "\(arguments)")
            #expect(result.stderr.contains(flag), "\(arguments): \(result.stderr)")
            for api in ["maxInputSize", "maxDepth", "maxFieldCount", "maxDecodedMemory", "DecodingOptions"] {
                #expect(!result.stderr.contains(api), "\(arguments): \(result.stderr)")
            }
        }
        let newer = Frame.with {
            $0.minReaderVersion = Frame.currentSchemaVersion + 1
            $0.payload = .message(Message())
        }
        let refused = try CLI.run(["decode"], input: newer.serializedBytes())
        #expect(refused.status == 1)
        #expect(refused.stderr.hasSuffix("(use --accept-newer-frames to read it anyway)\n"), "\(refused.stderr)")
    }

    @Test("encode: a newer frame needs --accept-newer-frames (the hint names it); a memory error has no JSON position")
    func encodeNamesItsFlagsAndPositions() throws {
        let json = "{\"minReaderVersion\": \(Frame.currentSchemaVersion + 1), \"message\": {\"clientMsgId\": \"x\"}}"
        for arguments in [["encode"], ["encode", "--delimited"]] {
            let refused = try CLI.run(arguments, input: Array(json.utf8))
            #expect(refused.status == 1, "\(arguments)")
            #expect(refused.stderr.hasSuffix("(use --accept-newer-frames to read it anyway)\n"), "\(refused.stderr)")
            #expect(!refused.stderr.contains("DecodingOptions") && !refused.stderr.contains("acceptsNewerFrames"))
            let encoded = try CLI.run(arguments + ["--accept-newer-frames"], input: Array(json.utf8))
            #expect(encoded.status == 0, "\(encoded.stderr)")
            var options = JSONDecodingOptions()
            options.acceptsNewerFrames = true
            let record = try Frame(jsonString: json, options: options).serializedBytes()
            var expected = record
            if arguments.contains("--delimited") { expected = []; Delimited.appendRecord(record, to: &expected) }
            #expect(encoded.stdout == expected)
        }
        // 200,000 empty elements: the JSON parses, the decoded message passes the JSON's memory
        // limit. The binary decoder's offset (into the bytes the JSON became) is not reported as a
        // position in the JSON, and the limit is the JSON's (no flag sets it).
        let many =
            "{\"message\":{\"elements\":[" + Array(repeating: "{}", count: 200_000).joined(separator: ",") + "]}}"
        let result = try CLI.run(["encode"], input: Array(many.utf8))
        #expect(result.status == 1)
        #expect(
            result.stderr.hasPrefix("imcodec: memoryLimitExceeded: the message would need more than "),
            "\(result.stderr)"
        )
        #expect(!result.stderr.contains("at byte") && !result.stderr.contains("maxDecodedMemory"), "\(result.stderr)")
        let error = #expect(throws: IMCodecError.self) { try Frame(jsonString: many) }
        #expect(error?.code == .memoryLimitExceeded && error?.offset == nil)
    }

    @Test("the demo's route: lines are FrameView.route of each frame (a receipt goes back to the referenced sender)")
    func demoPrintsFrameViewRoute() throws {
        let demo = try DemoFile()
        defer { demo.remove() }
        let routes = demo.transcript.split(separator: "\n").filter { $0.hasPrefix("    route: ") }
        #expect(routes.count == 35)
        let decoder = WireDecoder()
        for (line, record) in zip(routes, demo.records) {
            let route = try decoder.withFrameView(record) { $0.route }
            #expect(line.contains(" → .\(route)"), "\(line) is not \(route)")
        }
        #expect(routes[2] == "    route: receipt → .referencedSender(\"alice\")", "\(routes[2])")
        #expect(routes[3].hasPrefix("    route: message → .group(\"team-apollo\") from bob"), "\(routes[3])")
        #expect(routes[0].hasPrefix("    route: message → .user(\"bob\") from alice"), "\(routes[0])")
    }

    @Test("the README's count of the demo's frames is what the demo says and writes")
    func demoCountMatchesReadme() throws {
        let readme = try String(contentsOf: Protoc.root.appendingPathComponent("README.md"), encoding: .utf8)
        let readmeCount = try #require(readme.firstMatch(of: #/the demo's (\d+) frames/#).map { Int($0.1)! })
        let demo = try DemoFile()
        defer { demo.remove() }
        let said = try #require(
            demo.transcript.firstMatch(of: #/^IMCodec demo: (\d+) frames \((\d+) for /#).map {
                (Int($0.1)!, Int($0.2)!)
            }
        )
        #expect(demo.records.count == readmeCount)
        #expect(said.0 == readmeCount)
        #expect(said.1 == readmeCount - 1)  // the last needs a newer reader
        #expect(demo.transcript.contains("Read back \(readmeCount) of \(readmeCount) frames from "))
        #expect(readme.contains("prints the \(readmeCount - 1) frames"))
    }

    /// The records a command printed as good: decode's JSON lines, inspect's summaries, validate's "ok" lines.
    static func goodRecords(_ text: String, command: String) -> Int {
        let lines = text.split(separator: "\n")
        switch command {
        case "decode": return lines.count
        case "inspect": return lines.filter { $0.hasPrefix("record ") && $0.contains(" bytes at offset ") }.count
        default: return lines.filter { $0.hasPrefix("record ") && $0.hasSuffix(": ok") }.count
        }
    }

    /// The file `imcodec demo --output` writes, its records, where each starts, and the transcript.
    struct DemoFile {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("imcodec-demo-\(UUID().uuidString)")
        let transcript: String
        let records: [ArraySlice<UInt8>]
        /// The byte offset of each record's length prefix.
        let offsets: [Int]

        init() throws {
            let result = try CLI.run(["demo", "--output", url.path])
            #expect(result.status == 0, "\(result.stderr)")
            transcript = result.text
            let bytes = try FixtureFiles.bytes(url)
            var reader = Delimited.RecordReader(bytes, maxLength: Int.max)
            var records: [ArraySlice<UInt8>] = []
            var offsets: [Int] = []
            while true {
                let offset = reader.offset
                guard let range = try reader.next() else { break }
                records.append(bytes[range])
                offsets.append(offset)
            }
            self.records = records
            self.offsets = offsets
        }

        func remove() { try? FileManager.default.removeItem(at: url) }
    }

    @Test("every command in the README's \"The imcodec tool\" section works as written")
    func readmeCommands() throws {
        let readme = try String(contentsOf: Protoc.root.appendingPathComponent("README.md"), encoding: .utf8)
        let section = try #require(readme.range(of: "### The `imcodec` tool"))
        let rest = readme[section.upperBound...]
        let start = try #require(rest.range(of: "```sh\n"))
        let end = try #require(rest[start.upperBound...].range(of: "```"))
        var lines = rest[start.upperBound..<end.lowerBound].split(separator: "\n").map(String.init)
        // The build line is what built the executable under test; $BIN points at it.
        #expect(lines.first?.hasPrefix("swift build --traits Tools --product imcodec") == true)
        lines.removeFirst()
        #expect(lines.count >= 8)
        let result = try CLI.shell(lines.joined(separator: "\n"))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.isEmpty, "\(result.stderr)")
        for expected in [
            "imcodec \(IMCodecRelease.version) (", "IMAGE_FORMAT_JPG", "frame: message", "ok\n",
            "every frame decodes equal to what was encoded", "{\"schemaVersion\":\(Frame.currentSchemaVersion),",
            "\"senderId\": \"alice\"", "\n36\n",
        ] {
            #expect(result.text.contains(expected), "README commands' output lacks \(expected)")
        }
    }
}
#endif

#if Tools
extension CLI {
    /// The built `imcodec-relay`, next to `imcodec`.
    static func relay() throws -> URL {
        let executable = try #require(CLI.executable, "the imcodec executable was not built next to the tests")
        let url = executable.deletingLastPathComponent().appendingPathComponent("imcodec-relay")
        try #require(
            FileManager.default.isExecutableFile(atPath: url.path),
            "imcodec-relay was not built next to imcodec"
        )
        return url
    }
}
#endif
