// The text formats (`--formats`): proto3 JSON and protobuf text format, printed from values and
// parsed back into values, on the traffic corpus. Their own table: swift-protobuf and protobuf-c
// have no rows to compare with here (swift-protobuf's JSON is another implementation of the
// mapping, and protobuf-c has none).
import Foundation
import IMCodec

enum FormatPathName {
    static let jsonPrint = "imcodec json print"
    static let jsonParse = "imcodec json parse"
    static let textPrint = "imcodec text print"
    static let textParse = "imcodec text parse"
}

/// The corpus as values, JSON and text, made once before timing.
struct FormatCorpus {
    let frames: [Frame]
    let json: [String]
    let text: [String]

    init(_ p: Prepared) throws {
        frames = p.imcodecFrames
        json = try frames.map { try $0.jsonString() }
        text = frames.map { $0.textFormatString() }
        // The parsers must give back the values they were printed from.
        for index in frames.indices {
            guard try Frame(jsonString: json[index]) == frames[index],
                try Frame(textFormatString: text[index]) == frames[index]
            else { throw FormatCheckFailure(index: index) }
        }
    }

    var jsonBytes: Int { json.reduce(0) { $0 + $1.utf8.count } }
    var textBytes: Int { text.reduce(0) { $0 + $1.utf8.count } }
}

struct FormatCheckFailure: Error, CustomStringConvertible {
    let index: Int
    var description: String { "frame \(index) does not survive JSON or text format" }
}

enum FormatPaths {
    static func jsonPrint(_ f: FormatCorpus) -> UInt64 {
        var sum: UInt64 = 0
        for frame in f.frames { sum &+= UInt64((try? frame.jsonString())?.utf8.count ?? 0) }
        return sum
    }

    static func jsonParse(_ f: FormatCorpus) -> UInt64 {
        var sum: UInt64 = 0
        for json in f.json { sum &+= UInt64((try? Frame(jsonString: json))?.schemaVersion ?? 0) }
        return sum
    }

    static func textPrint(_ f: FormatCorpus) -> UInt64 {
        var sum: UInt64 = 0
        for frame in f.frames { sum &+= UInt64(frame.textFormatString().utf8.count) }
        return sum
    }

    static func textParse(_ f: FormatCorpus) -> UInt64 {
        var sum: UInt64 = 0
        for text in f.text { sum &+= UInt64((try? Frame(textFormatString: text))?.schemaVersion ?? 0) }
        return sum
    }
}

/// Measures the four format paths on `p`'s frames and prints their table.
func runFormats(_ p: Prepared, settings: MeasureSettings) throws {
    let f = try FormatCorpus(p)
    let c = p.corpus
    print(
        "text forms of the corpus: JSON \(f.jsonBytes) bytes (mean \(format(Double(f.jsonBytes) / Double(c.count), 1))), "
            + "text format \(f.textBytes) bytes (mean \(format(Double(f.textBytes) / Double(c.count), 1))); "
            + "MB/s below counts the wire bytes of the frames"
    )
    let benchmarks = [
        singleThreaded(FormatPathName.jsonPrint, corpus: c, settings: settings) { FormatPaths.jsonPrint(f) },
        singleThreaded(FormatPathName.jsonParse, corpus: c, settings: settings) { FormatPaths.jsonParse(f) },
        singleThreaded(FormatPathName.textPrint, corpus: c, settings: settings) { FormatPaths.textPrint(f) },
        singleThreaded(FormatPathName.textParse, corpus: c, settings: settings) { FormatPaths.textParse(f) },
    ]
    for b in benchmarks { b.warmUp() }
    for _ in 1...settings.repetitions {
        for b in benchmarks { b.runRepetition() }
    }
    let rows = benchmarks.map { Row(measurement: $0.measurement, direction: .stamp, listed: true) }
    print("== \(c.name): \(c.count) frames, mean \(format(c.meanBytes, 1)) bytes ==")
    print(table(rows, corpus: c))
}
