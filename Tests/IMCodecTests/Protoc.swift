import Foundation
import IMCodecTestSupport

/// Runs Google's protoc on Schemas/ (the independent encoder the tests compare against).
enum Protoc {
    /// The repository's root (this file is Tests/IMCodecTests/Protoc.swift): the one place the tests
    /// find it from `#filePath`.
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let schemas = root.appendingPathComponent("Schemas").path

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Runs protoc with `arguments`, feeding `input` on standard input; returns standard output.
    static func run(_ arguments: [String], input: [UInt8]) throws -> [UInt8] {
        let (termination, output, errors) = try ChildProcess.run(
            "/usr/bin/env",
            ["protoc", "-I", schemas, "-I", "/usr/include"] + arguments,
            input: input
        )
        guard termination == .exited(0) else {
            let errorText = String(decoding: errors, as: UTF8.self)
            throw Failure(description: "protoc \(arguments.joined(separator: " ")) failed: \(errorText)")
        }
        return output
    }

    /// What Google's deterministic serializer writes for the message `bytes` encode: protoc decodes
    /// them to text format and encodes that text again.
    static func reencode(_ bytes: [UInt8], type: String = "imcodec.v1.Frame") throws -> [UInt8] {
        let text = try run(["--decode=\(type)", "imcodec/v1/frame.proto"], input: bytes)
        return try encode(text: text, type: type)
    }

    /// protoc --decode of wire bytes: the text format Google's C++ printer writes.
    static func decode(_ bytes: [UInt8], type: String = "imcodec.v1.Frame") throws -> String {
        String(decoding: try run(["--decode=\(type)", "imcodec/v1/frame.proto"], input: bytes), as: UTF8.self)
    }

    /// protoc --encode --deterministic_output of text format.
    static func encode(text: [UInt8], type: String = "imcodec.v1.Frame") throws -> [UInt8] {
        try run(["--encode=\(type)", "--deterministic_output", "imcodec/v1/frame.proto"], input: text)
    }
}
