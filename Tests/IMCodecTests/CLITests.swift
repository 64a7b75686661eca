import Foundation
import IMCodec
import Testing

#if Tools  // the imcodec tool is built with the Tools trait (Package.swift)
@Suite("The imcodec command-line tool")
struct CLITests {
    @Test("decode prints each valid fixture's JSON; encode of that JSON gives its bytes", arguments: FixtureFiles.validNames)
    func fixtureThroughExecutable(name: String) throws {
        let binpb = FixtureFiles.valid.appendingPathComponent(name + ".binpb")
        let jsonURL = FixtureFiles.valid.appendingPathComponent(name + ".json")
        let decoded = try CLI.run(["decode", binpb.path])
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

    @Test("decode of each invalid fixture exits 1 with one error line: code, reason, offset", arguments: FixtureFiles.invalidNames)
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
        // A record cut short is bad input, with the offset in the whole stream.
        let cut = try CLI.run(["decode", "--delimited"], input: Array(stream.dropLast()))
        #expect(cut.status == 1)
        #expect(cut.stderr.hasPrefix("imcodec: truncated: "))
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
        let result = try CLI.run(["validate"], input: Frame(bad).serializedBytes())
        #expect(result.status == 1)
        #expect(result.text.contains("atOutsideGroup"))
        #expect(result.text.contains("fileTooLarge"))
        #expect(result.text.contains("elementMustBeAlone"))
    }

    @Test("demo writes, reads back and checks every message kind")
    func demo() throws {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("imcodec-demo-test-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: output) }
        let result = try CLI.run(["demo", "--output", output.path])
        #expect(result.status == 0, "\(result.stderr)")
        let text = result.text
        for expected in ["C2C bob from alice", "@ alice, @carol", "image png", "elements (4)", "merger \"Launch thread\"",
                         "merger \"Staging test\"", "read receipt", "2 read, 1 unread", "recall of", "edit of",
                         "ack for a-0001: accepted", "rejected with 80001",
                         "every frame decodes equal to what was encoded"] {
            #expect(text.contains(expected), "demo transcript lacks \(expected)")
        }
        #expect(!text.contains("DIFFERS"))
        let written = try FixtureFiles.bytes(output)
        var reader = Delimited.Reader<Frame>(written)
        var count = 0
        while try reader.next() != nil { count += 1 }
        #expect(count == 12)
    }
}
#endif
