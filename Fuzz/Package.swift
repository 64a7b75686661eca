// swift-tools-version: 6.0
// IMCodec's fuzz targets (libFuzzer) and a decode benchmark: a separate package so the library's own
// build stays lean. Build and run them with `Fuzz/run` (see Fuzz/README.md), which also fetches
// protobuf-c's source and points the build at an instrumented copy of it.
import PackageDescription

let imcodec = Target.Dependency.product(name: "IMCodec", package: "IMCodec")
// The checks every fuzz input must pass (FuzzChecks).
let testSupport = Target.Dependency.product(name: "IMCodecTestSupport", package: "IMCodec")

// The library under test: this checkout (".."), or another one named by IMCODEC_FUZZ_LIBRARY (an
// absolute path; `Fuzz/run --bench` only, to compare the decode throughput of two versions).
let libraryPath = Context.environment["IMCODEC_FUZZ_LIBRARY"].flatMap { $0.isEmpty ? nil : $0 } ?? ".."

// The fuzz targets and the checks they run (the library's IMCodecTestSupport). They are left out
// when another library is named: --bench builds only DecodeBench. (The heap probe of `--heap` is the
// library's own imcodec-heap-probe, Tests/HeapProbe.)
let fuzzTargets: [Target] = [
    // The sanitizer allocator's statistics, when the build has AddressSanitizer.
    .target(name: "FuzzSupport"),
    // Frame from arbitrary bytes: every decoding path, re-encoding, routing view, JSON, memory.
    .executableTarget(name: "FuzzBinaryDecode", dependencies: [testSupport, "FuzzSupport"]),
    // Frame(jsonString:) on arbitrary text, and the round trips of what parses.
    .executableTarget(name: "FuzzJSONDecode", dependencies: [testSupport, "FuzzSupport"]),
    // Frame(textFormatString:) on arbitrary text, and the round trips of what parses.
    .executableTarget(name: "FuzzTextFormatDecode", dependencies: [testSupport, "FuzzSupport"]),
    // Delimited.Reader<Frame> over arbitrary bytes.
    .executableTarget(name: "FuzzDelimited", dependencies: [testSupport, "FuzzSupport"]),
]

let package = Package(
    name: "IMCodecFuzz",
    dependencies: [
        .package(name: "IMCodec", path: libraryPath)
    ],
    targets: (libraryPath == ".." ? fuzzTargets : []) + [
        // Decode throughput, to compare two versions of the library (Fuzz/run --bench).
        .executableTarget(name: "DecodeBench", dependencies: [imcodec])
    ]
)
