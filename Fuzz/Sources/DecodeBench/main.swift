// Decode throughput of IMCodec on the fixtures and on generated history pages, to compare two
// versions of the library (`Fuzz/run --bench`, with IMCODEC_FUZZ_LIBRARY for the other one).
// Prints the best of several repetitions: ns per frame and MB/s, for small frames (under 2 KiB,
// where the pre-scan runs without its memory estimate), the large fixtures, and 256 KiB pages.
import Foundation
import IMCodec

func load(_ folder: String) -> [[UInt8]] {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: folder))?.sorted() ?? []
    return names.filter { $0.hasSuffix(".binpb") }.compactMap { name in
        (try? Data(contentsOf: URL(fileURLWithPath: folder).appendingPathComponent(name))).map { [UInt8]($0) }
    }
}

func page(_ size: Int) -> [UInt8] {
    var response = HistoryResponse()
    response.conversation = .group("@TGS#2J4SZEAEL")
    var total = 0
    var i = 0
    while total < size {
        var message = Message.groupText(
            from: "user_\(10_000 + i % 97)",
            group: "@TGS#2J4SZEAEL",
            "see you tomorrow at the usual place, message number \(i)",
            clientMsgID: "cli-7f3a9c2e-\(i)"
        )
        message.seq = UInt64(4000 + i)
        total += message.serializedBytes().count + 3
        response.messages.append(message)
        i += 1
    }
    return Frame(.historyResponse(response)).serializedBytes()
}

/// DECODEBENCH_ROUNDS=N: exactly N rounds, once (for instruction counts under valgrind).
let fixedRounds = ProcessInfo.processInfo.environment["DECODEBENCH_ROUNDS"].flatMap { Int($0) }
let only = ProcessInfo.processInfo.environment["DECODEBENCH_ONLY"]

func bench(_ name: String, _ frames: [[UInt8]], minimumSeconds: Double = 0.3, repetitions: Int = 7) {
    if let only, !name.contains(only) { return }
    if let fixedRounds {
        var sink = 0
        for _ in 0..<fixedRounds {
            for frame in frames {
                if let decoded = try? Frame(serializedBytes: frame) { sink &+= decoded.schemaVersion == 0 ? 1 : 2 }
            }
        }
        print(name, fixedRounds, "rounds", sink)
        return
    }
    let bytes = frames.reduce(0) { $0 + $1.count }
    var best = Double.infinity
    var sink = 0
    for _ in 0..<repetitions {
        var rounds = 0
        let start = DispatchTime.now().uptimeNanoseconds
        var elapsed = 0.0
        repeat {
            for frame in frames {
                if let decoded = try? Frame(serializedBytes: frame) { sink &+= decoded.schemaVersion == 0 ? 1 : 2 }
            }
            rounds += 1
            elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        } while elapsed < minimumSeconds
        best = min(best, elapsed / Double(rounds))
    }
    let ns = best / Double(frames.count) * 1e9
    print(
        name.padding(toLength: 34, withPad: " ", startingAt: 0),
        String(
            format: "%6d frames %9d bytes %10.0f ns/frame %8.1f MB/s",
            frames.count,
            bytes,
            ns,
            Double(bytes) / best / 1e6
        ),
        sink == -1 ? "" : ""
    )
}

let folder = CommandLine.arguments.dropFirst().first ?? "Fixtures/valid"
let fixtures = load(folder)
bench("fixtures under 2 KiB", fixtures.filter { $0.count < 2048 })
bench("fixtures of 2 KiB and more", fixtures.filter { $0.count >= 2048 })
bench("history pages of 16 KiB", (0..<4).map { _ in page(16 << 10) })
bench("history page of 256 KiB", [page(256 << 10)])
