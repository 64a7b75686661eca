import CAllocationCounter
// imcodec-bench: IMCodec against raw protobuf-c and apple/swift-protobuf, in one process, on the
// same bytes (issue 5). Run it through `Benchmarks/run`; `--help` lists the options.
import CProtobufCBench
import Foundation
import IMCodec

// MARK: Options

struct Options {
    var jsonPath: String?
    var settings = MeasureSettings()
    var frames = 10_000
    var seed: UInt64 = 20_251_121
    var large = true
    /// --profile PATH: run only that path, `profilePasses` times, for valgrind (no timing).
    var profilePath: String?
    var profilePasses = 3
    /// --formats: measure only the JSON and text-format paths (Formats.swift).
    var formats = false
}

func parseOptions() -> Options {
    var options = Options()
    var args = CommandLine.arguments.dropFirst()
    func value(_ flag: String) -> String {
        guard let v = args.popFirst() else { fail("\(flag) needs a value") }
        return v
    }
    while let arg = args.popFirst() {
        switch arg {
        case "--json": options.jsonPath = value(arg)
        case "--quick":
            options.settings.repetitions = 3
            options.settings.minSecondsPerRepetition = 0.05
            options.settings.warmUpSeconds = 0.05
        case "--repetitions": options.settings.repetitions = max(1, Int(value(arg)) ?? 11)
        case "--min-time": options.settings.minSecondsPerRepetition = Double(value(arg)) ?? 0.2
        case "--frames": options.frames = max(1, Int(value(arg)) ?? 10_000)
        case "--seed": options.seed = UInt64(value(arg)) ?? options.seed
        case "--no-large": options.large = false
        case "--profile": options.profilePath = value(arg)
        case "--passes": options.profilePasses = max(1, Int(value(arg)) ?? 3)
        case "--formats": options.formats = true
        case "-h", "--help":
            print(
                """
                usage: imcodec-bench [--json FILE] [--quick] [--repetitions N] [--min-time SECONDS]
                                     [--frames N] [--seed N] [--no-large] [--formats]
                  --json FILE       also write the traffic corpus figures as a JSON array of
                                    {"path", "ns_per_msg", "mb_per_s", "mallocs_per_msg"}
                  --quick           3 short repetitions per path (a smoke run; figures are noisy)
                  --repetitions N   timed repetitions per path, median reported (default 11)
                  --min-time S      seconds per repetition, whole passes over the corpus (default 0.2)
                  --frames N        frames in the traffic corpus (default 10000)
                  --seed N          corpus seed (default 20251121)
                  --no-large        skip the large-frames corpus
                  --profile PATH    run one path (a name from the table) --passes N times (default 3)
                                    over the traffic corpus, untimed, for valgrind: collect with
                                    --collect-atstart=no --toggle-collect='*profileLoop*'
                  --formats         measure only proto3 JSON and text format (print from values,
                                    parse into values) on the traffic corpus
                """
            )
            exit(0)
        default: fail("unknown option \(arg) (see --help)")
        }
    }
    return options
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("imcodec-bench: \(message)\n".utf8))
    exit(1)
}

// MARK: Running the paths

/// Which swift-protobuf and protobuf-c rows a row is compared with.
enum Direction {
    case decode, encode
    /// Server stamping (compared with each other, see `stampComparison`; the ratio columns stay empty).
    case stamp
}

struct Row {
    let measurement: Measurement
    let direction: Direction
    /// Part of the fixed list (and of the JSON); other rows are supplementary.
    let listed: Bool
}

/// The path names, in the order the table and the JSON list them.
enum PathName {
    static let unpack = "protobuf-c unpack"
    static let unpackArena = "protobuf-c unpack arena"
    static let pack = "protobuf-c pack"
    static let route = "imcodec route"
    static let decode = "imcodec decode"
    static let viewReadAll = "imcodec view read-all"
    static let encode = "imcodec encode"
    static let spDecode = "swift-protobuf decode"
    static let spEncode = "swift-protobuf encode"
    static let route2 = "imcodec route 2 threads"
    static let stamp = "imcodec stamp"
    static let decodeModifyEncode = "imcodec decode+modify+encode"
    static let decodeMessages = "imcodec decode, message frames"
    static let decodeStamped = "imcodec decode, stamped messages"
    static let routeStrings = "imcodec route, ids as Strings"
    static let decodeOneShot = "imcodec decode, one-shot init"
    static let unpackArena2 = "protobuf-c unpack arena 2 threads"
    static let encodeWireEncoder = "imcodec encode, WireEncoder"
    static let encodeWireEncoderLent = "imcodec encode, WireEncoder lent"
}

/// An arena for one thread's "protobuf-c unpack arena" loop, freed with the worker.
final class ArenaBox {
    let arena: UnsafeMutableRawPointer = pbc_bench_arena_create()!
    deinit { pbc_bench_arena_destroy(arena) }
}

// Long on purpose (over 80 lines): one registration per measured path, in the order of the table.
func run(_ p: Prepared, settings: MeasureSettings, progress: Bool) -> [Row] {
    let c = p.corpus
    var benchmarks: [(Benchmark, Direction, Bool)] = []
    func add(_ b: Benchmark, _ direction: Direction, listed: Bool = true) { benchmarks.append((b, direction, listed)) }

    add(singleThreaded(PathName.unpack, corpus: c, settings: settings) { Paths.protobufCUnpack(p) }, .decode)
    let arena = pbc_bench_arena_create()!
    defer { pbc_bench_arena_destroy(arena) }
    add(
        singleThreaded(PathName.unpackArena, corpus: c, settings: settings) {
            Paths.protobufCUnpackArena(p, arena: arena)
        },
        .decode
    )
    add(singleThreaded(PathName.pack, corpus: c, settings: settings) { Paths.protobufCPack(p) }, .encode)
    let decoder = WireDecoder()
    add(singleThreaded(PathName.route, corpus: c, settings: settings) { Paths.imcodecRoute(p, decoder) }, .decode)
    add(singleThreaded(PathName.decode, corpus: c, settings: settings) { Paths.imcodecDecode(p, decoder) }, .decode)
    add(
        singleThreaded(PathName.viewReadAll, corpus: c, settings: settings) { Paths.imcodecViewReadAll(p, decoder) },
        .decode
    )
    add(singleThreaded(PathName.encode, corpus: c, settings: settings) { Paths.imcodecEncode(p) }, .encode)
    add(singleThreaded(PathName.spDecode, corpus: c, settings: settings) { Paths.swiftProtobufDecode(p) }, .decode)
    add(singleThreaded(PathName.spEncode, corpus: c, settings: settings) { Paths.swiftProtobufEncode(p) }, .encode)
    add(
        multiThreaded(PathName.route2, threads: 2, corpus: c, settings: settings) {
            let decoder = WireDecoder()
            return { Paths.imcodecRoute(p, decoder) }
        },
        .decode
    )
    // Stamping runs over the corpus's message frames only (other payloads cannot be stamped), so
    // these rows are per message frame.
    if p.messages.count > 0 {
        add(
            singleThreaded(PathName.stamp, corpus: p.messages, settings: settings) {
                Paths.imcodecStamp(p, decoder)
            },
            .stamp
        )
        add(
            singleThreaded(PathName.decodeModifyEncode, corpus: p.messages, settings: settings) {
                Paths.imcodecDecodeModifyEncode(p, decoder)
            },
            .stamp
        )
    }
    add(
        singleThreaded(PathName.routeStrings, corpus: c, settings: settings) {
            Paths.imcodecRouteWithStrings(p, decoder)
        },
        .decode,
        listed: false
    )
    add(
        singleThreaded(PathName.decodeOneShot, corpus: c, settings: settings) { Paths.imcodecDecodeOneShot(p) },
        .decode,
        listed: false
    )
    let encoder = WireEncoder()
    add(
        singleThreaded(PathName.encodeWireEncoder, corpus: c, settings: settings) {
            Paths.imcodecWireEncoderArray(p, encoder)
        },
        .encode,
        listed: false
    )
    add(
        singleThreaded(PathName.encodeWireEncoderLent, corpus: c, settings: settings) {
            Paths.imcodecWireEncoderLent(p, encoder)
        },
        .encode,
        listed: false
    )
    // The receiver's side of stamping: decoding the stamped frames (the repeated message field is
    // merged before protobuf-c runs) against decoding the same frames unstamped.
    if p.messages.count > 0 {
        add(
            singleThreaded(PathName.decodeMessages, corpus: p.messages, settings: settings) {
                Paths.imcodecDecode(p.messages.frames, decoder)
            },
            .stamp,
            listed: false
        )
        add(
            singleThreaded(PathName.decodeStamped, corpus: p.stampedMessages, settings: settings) {
                Paths.imcodecDecode(p.stampedMessages.frames, decoder)
            },
            .stamp,
            listed: false
        )
    }
    // The control for the 2-thread row: pure C with no shared state scales as far as the machine lets it.
    add(
        multiThreaded(PathName.unpackArena2, threads: 2, corpus: c, settings: settings) {
            let box = ArenaBox()
            return { Paths.protobufCUnpackArena(p, arena: box.arena) }
        },
        .decode,
        listed: false
    )

    for (b, _, _) in benchmarks { b.warmUp() }
    for rep in 1...settings.repetitions {
        for (b, _, _) in benchmarks { b.runRepetition() }
        if progress {
            FileHandle.standardError.write(
                Data("  \(c.name): repetition \(rep) of \(settings.repetitions) done\n".utf8)
            )
        }
    }
    return benchmarks.map { Row(measurement: $0.0.measurement, direction: $0.1, listed: $0.2) }
}

// MARK: Output

func pad(_ s: String, _ width: Int, left: Bool = false) -> String {
    let n = s.count
    if n >= width { return s }
    let fill = String(repeating: " ", count: width - n)
    return left ? s + fill : fill + s
}

func ns(_ rows: [Row], _ path: String) -> Double {
    rows.first { $0.measurement.path == path }?.measurement.nsPerMsg ?? .nan
}

/// The fastest repetition's ns/msg of `path`.
func minNs(_ rows: [Row], _ path: String) -> Double {
    rows.first { $0.measurement.path == path }?.measurement.samples.min() ?? .nan
}

func table(_ rows: [Row], corpus: Corpus) -> String {
    let header = [
        pad("path", 31, left: true), pad("ns/msg", 10), pad("MB/s", 9), pad("mallocs/msg", 12),
        pad("vs swift-protobuf", 18), pad("vs protobuf-c", 14), pad("min ns/msg", 11), pad("spread", 7),
    ]
    var lines = [header.joined(separator: " ")]
    lines.append(String(repeating: "-", count: lines[0].count))
    var shownSeparator = false
    for row in rows {
        if !row.listed && !shownSeparator {
            lines.append(String(repeating: "-", count: lines[0].count))
            shownSeparator = true
        }
        let m = row.measurement
        var sp = ns(rows, row.direction == .decode ? PathName.spDecode : PathName.spEncode)
        var pc = ns(rows, row.direction == .decode ? PathName.unpackArena : PathName.pack)
        if row.direction == .stamp { (sp, pc) = (.nan, .nan) }
        lines.append(
            [
                pad(m.path, 31, left: true), pad(format(m.nsPerMsg, 1), 10), pad(format(m.mbPerS, 1), 9),
                pad(format(m.mallocsPerMsg, 2), 12), pad(ratio(sp / m.nsPerMsg), 18), pad(ratio(pc / m.nsPerMsg), 14),
                pad(format(m.samples.min() ?? .nan, 1), 11),
                pad(format(100 * m.spread, 1) + "%", 7),
            ].joined(separator: " ")
        )
    }
    return lines.joined(separator: "\n")
}

/// `2.50x`, or `-` when there is nothing to compare with.
func ratio(_ value: Double) -> String { value.isFinite ? format(value, 2) + "x" : "-" }

/// How much faster stamping the bytes is than decode + modify + encode (medians and fastest
/// repetitions), and what the receiver pays for decoding a stamped frame.
func stampComparison(_ rows: [Row]) -> String? {
    guard rows.contains(where: { $0.measurement.path == PathName.stamp }) else { return nil }
    let median = ns(rows, PathName.decodeModifyEncode) / ns(rows, PathName.stamp)
    let best = minNs(rows, PathName.decodeModifyEncode) / minNs(rows, PathName.stamp)
    let receiver = ns(rows, PathName.decodeStamped) / ns(rows, PathName.decodeMessages)
    return "stamp vs decode+modify+encode (message frames): \(ratio(median)) faster "
        + "(fastest repetitions: \(ratio(best))); "
        + "a receiver decodes a stamped frame in \(ratio(receiver)) the time of the unstamped one"
}

struct Target {
    let text: String
    let measured: String
    let met: Bool
    let detail: String
}

func targets(_ rows: [Row]) -> [Target] {
    func mallocs(_ path: String) -> Double {
        rows.first { $0.measurement.path == path }?.measurement.mallocsPerMsg ?? .nan
    }
    // Each ratio from the medians (what is judged) and from the fastest repetitions (for context).
    func ratio(_ numerator: String, _ denominator: String) -> (median: Double, best: Double) {
        (ns(rows, numerator) / ns(rows, denominator), minNs(rows, numerator) / minNs(rows, denominator))
    }
    let view = ratio(PathName.spDecode, PathName.viewReadAll)
    let decode = ratio(PathName.spDecode, PathName.decode)
    let route = ratio(PathName.route, PathName.unpackArena)
    let encode = ratio(PathName.spEncode, PathName.encode)
    let scaling = ratio(PathName.route, PathName.route2)
    func best(_ r: (median: Double, best: Double)) -> String { "fastest repetitions: \(format(r.best, 2))x" }
    return [
        Target(
            text: "view read-all >= 4x swift-protobuf decode throughput",
            measured: format(view.median, 2) + "x",
            met: view.median >= 4,
            detail: (view.median >= 4
                ? ""
                : "needs <= \(format(ns(rows, PathName.spDecode) / 4, 0)) ns/msg, "
                    + "is \(format(ns(rows, PathName.viewReadAll), 0)); ") + best(view)
        ),
        Target(
            text: "view read-all <= 1 malloc/msg",
            measured: format(mallocs(PathName.viewReadAll), 2),
            met: mallocs(PathName.viewReadAll) <= 1,
            detail: ""
        ),
        Target(
            text: "full decode >= 2.5x swift-protobuf decode throughput",
            measured: format(decode.median, 2) + "x",
            met: decode.median >= 2.5,
            detail: (decode.median >= 2.5
                ? ""
                : "needs <= \(format(ns(rows, PathName.spDecode) / 2.5, 0)) ns/msg, "
                    + "is \(format(ns(rows, PathName.decode), 0)); ") + best(decode)
        ),
        Target(
            text: "route time <= 1.25x protobuf-c arena unpack",
            measured: format(route.median, 2) + "x",
            met: route.median <= 1.25,
            detail: (route.median <= 1.25
                ? ""
                : "needs <= \(format(ns(rows, PathName.unpackArena) * 1.25, 0)) ns/msg, "
                    + "is \(format(ns(rows, PathName.route), 0)); ") + best(route)
        ),
        Target(
            text: "route <= 1 malloc/msg",
            measured: format(mallocs(PathName.route), 2),
            met: mallocs(PathName.route) <= 1,
            detail: ""
        ),
        Target(
            text: "encode >= 3x swift-protobuf encode throughput",
            measured: format(encode.median, 2) + "x",
            met: encode.median >= 3,
            detail: (encode.median >= 3
                ? ""
                : "needs <= \(format(ns(rows, PathName.spEncode) / 3, 0)) ns/msg, "
                    + "is \(format(ns(rows, PathName.encode), 0)); ") + best(encode)
        ),
        Target(
            text: "encode <= 1 malloc/msg",
            measured: format(mallocs(PathName.encode), 2),
            met: mallocs(PathName.encode) <= 1,
            detail: ""
        ),
        Target(
            text: "route on 2 threads >= 1.8x one thread",
            measured: format(scaling.median, 2) + "x",
            met: scaling.median >= 1.8,
            detail: best(scaling) + "; control, protobuf-c arena unpack on 2 threads: "
                + format(ns(rows, PathName.unpackArena) / ns(rows, PathName.unpackArena2), 2) + "x"
        ),
    ]
}

func json(_ rows: [Row]) -> String {
    func number(_ v: Double) -> String { v.isFinite ? format(v, 3) : "null" }
    let items = rows.filter(\.listed).map { row -> String in
        let m = row.measurement
        return "  {\"path\": \"\(m.path)\", \"ns_per_msg\": \(number(m.nsPerMsg)), \"mb_per_s\": \(number(m.mbPerS)), "
            + "\"mallocs_per_msg\": \(number(m.mallocsPerMsg))}"
    }
    return "[\n" + items.joined(separator: ",\n") + "\n]\n"
}

func machineDescription() -> String {
    var cpu = "unknown CPU"
    if let info = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
        let line = info.split(separator: "\n").first(where: { $0.hasPrefix("model name") }),
        let colon = line.firstIndex(of: ":")
    {
        cpu = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
    }
    return "\(cpu), \(ProcessInfo.processInfo.activeProcessorCount) cores"
}

/// One pass of the path called `name` (the table's names), for --profile.
func singlePass(_ name: String, _ p: Prepared) -> (() -> UInt64)? {
    switch name {
    case PathName.unpack: return { Paths.protobufCUnpack(p) }
    case PathName.unpackArena:
        let arena = pbc_bench_arena_create()!  // lives until the process exits
        return { Paths.protobufCUnpackArena(p, arena: arena) }
    case PathName.pack: return { Paths.protobufCPack(p) }
    case PathName.route, PathName.route2:
        let decoder = WireDecoder()
        return { Paths.imcodecRoute(p, decoder) }
    case PathName.routeStrings:
        let decoder = WireDecoder()
        return { Paths.imcodecRouteWithStrings(p, decoder) }
    case PathName.decode:
        let decoder = WireDecoder()
        return { Paths.imcodecDecode(p, decoder) }
    case PathName.viewReadAll:
        let decoder = WireDecoder()
        return { Paths.imcodecViewReadAll(p, decoder) }
    case PathName.decodeOneShot: return { Paths.imcodecDecodeOneShot(p) }
    case PathName.encode: return { Paths.imcodecEncode(p) }
    case PathName.encodeWireEncoder:
        let encoder = WireEncoder()
        return { Paths.imcodecWireEncoderArray(p, encoder) }
    case PathName.encodeWireEncoderLent:
        let encoder = WireEncoder()
        return { Paths.imcodecWireEncoderLent(p, encoder) }
    case PathName.stamp:
        let decoder = WireDecoder()
        return { Paths.imcodecStamp(p, decoder) }
    case PathName.decodeModifyEncode:
        let decoder = WireDecoder()
        return { Paths.imcodecDecodeModifyEncode(p, decoder) }
    case PathName.decodeMessages:
        let decoder = WireDecoder()
        return { Paths.imcodecDecode(p.messages.frames, decoder) }
    case PathName.decodeStamped:
        let decoder = WireDecoder()
        return { Paths.imcodecDecode(p.stampedMessages.frames, decoder) }
    case PathName.spDecode: return { Paths.swiftProtobufDecode(p) }
    case PathName.spEncode: return { Paths.swiftProtobufEncode(p) }
    default: return nil
    }
}

/// The only code valgrind collects under --profile (its name is the toggle-collect pattern).
@inline(never)
func profileLoop(_ passes: Int, _ body: () -> UInt64) -> UInt64 {
    var sum: UInt64 = 0
    for _ in 0..<passes { sum &+= body() }
    return sum
}

// MARK: Main

let options = parseOptions()
guard allocation_counter_is_active() != 0 else {
    fail("the malloc counter is not interposed; mallocs/msg would be wrong")
}
// Count calls only: the live-byte tracking the heap probe uses would add to every timed allocation.
allocation_counter_track_bytes(0)

if let name = options.profilePath {
    var generator = CorpusGenerator(seed: options.seed)
    let traffic = generator.traffic(count: options.frames)
    let corpus = Corpus(name: "traffic", frames: traffic.frames.map { $0.serializedBytes() }, mix: traffic.mix)
    let prepared: Prepared
    do { prepared = try Prepared(corpus) } catch { fail("\(error)") }
    guard let pass = singlePass(name, prepared) else { fail("--profile: no path called \"\(name)\"") }
    consume(pass())  // warm-up, outside the collected function
    let m0 = allocation_counter_thread_calls()
    consume(profileLoop(options.profilePasses, pass))
    // The stamp paths run over the message frames only.
    let messagePaths = [PathName.stamp, PathName.decodeModifyEncode, PathName.decodeMessages, PathName.decodeStamped]
    let perPass = messagePaths.contains(name) ? prepared.messages.count : corpus.count
    let messages = options.profilePasses * perPass
    let mallocs = Double(allocation_counter_thread_calls() - m0) / Double(messages)
    print(
        "profiled \"\(name)\": \(options.profilePasses) passes over \(corpus.count) frames = \(messages) messages "
            + "(\(corpus.totalBytes) bytes a pass); \(format(mallocs, 2)) mallocs/msg"
    )
    exit(0)
}

if options.formats {
    var generator = CorpusGenerator(seed: options.seed)
    let traffic = generator.traffic(count: options.frames)
    let corpus = Corpus(name: "traffic", frames: traffic.frames.map { $0.serializedBytes() }, mix: traffic.mix)
    print("IMCodec benchmark, text formats: JSON and text format print and parse on the traffic corpus")
    print("machine: \(machineDescription())")
    do { try runFormats(try Prepared(corpus), settings: options.settings) } catch { fail("\(error)") }
    exit(0)
}

print("IMCodec benchmark (issue 5): every path in one process on the same bytes")
print("machine: \(machineDescription())")
print(
    "settings: per path \(options.settings.warmUpSeconds) s warm-up, then \(options.settings.repetitions) repetitions "
        + "(3 or more on the large corpus) of >= \(options.settings.minSecondsPerRepetition) s, run round-robin across paths; "
        + "figures are medians; mallocs counted per thread (interposed malloc)"
)
print("")

var generator = CorpusGenerator(seed: options.seed)
let traffic = generator.traffic(count: options.frames)
let corpora: [Corpus] = {
    var list = [Corpus(name: "traffic", frames: traffic.frames.map { $0.serializedBytes() }, mix: traffic.mix)]
    if options.large {
        var largeGenerator = CorpusGenerator(seed: options.seed &+ 1)
        let large = largeGenerator.large(historyPages: 48, mergers: 12)
        list.append(Corpus(name: "large frames", frames: large.frames.map { $0.serializedBytes() }, mix: large.mix))
    }
    return list
}()

var results: [(Corpus, [Row])] = []
for corpus in corpora {
    print(corpus.summary)
    let prepared: Prepared
    do {
        prepared = try Prepared(corpus)
        print("  check: " + (try Paths.check(prepared)))
    } catch {
        fail("\(error)")
    }
    let settings =
        corpus.name == "traffic"
        ? options.settings
        : {
            var s = options.settings
            s.repetitions = max(3, s.repetitions / 2)
            return s
        }()
    results.append((corpus, run(prepared, settings: settings, progress: true)))
}
print("")

for (corpus, rows) in results {
    print("== \(corpus.name): \(corpus.count) frames, mean \(format(corpus.meanBytes, 1)) bytes ==")
    print(table(rows, corpus: corpus))
    if let line = stampComparison(rows) { print(line) }
    print("")
}
print(
    """
    vs swift-protobuf: throughput relative to swift-protobuf decode (decode and route rows) or encode
    (encode and pack rows); vs protobuf-c: relative to protobuf-c unpack arena or pack. Above 1 is faster.
    ns/msg of "imcodec route 2 threads" is wall time per message with both threads busy.
    The stamp rows and "imcodec decode, message frames / stamped messages" run over the corpus's message
    frames only (the frames a server stamps), so their ns/msg is per message frame.
    ns/msg, MB/s, mallocs/msg and the ratios are medians over the repetitions; min ns/msg is the fastest
    repetition (the least disturbed by other work on the machine); spread: (slowest - fastest) / median.

    """
)

if let (_, rows) = results.first {
    print("Targets (issue 9), traffic corpus:")
    for t in targets(rows) {
        let status = t.met ? "met" : "MISSED"
        print(
            "  [\(pad(status, 6, left: true))] \(pad(t.text, 52, left: true)) \(pad(t.measured, 7))"
                + (t.detail.isEmpty ? "" : "  (\(t.detail))")
        )
    }
    if let path = options.jsonPath {
        do {
            try json(rows).write(toFile: path, atomically: true, encoding: .utf8)
            print("\nwrote \(path)")
        } catch {
            fail("cannot write \(path): \(error)")
        }
    }
}
consume(blackHole)
