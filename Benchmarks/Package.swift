// swift-tools-version: 6.0
// The IMCodec benchmark suite: a separate package so the library's own build stays lean.
// Run it with `Benchmarks/run` (see Benchmarks/README.md).
import PackageDescription

// The library under test: this checkout (".."), or another one named by IMCODEC_BENCH_LIBRARY
// (an absolute path), to compare two versions of IMCodec with the same harness.
let libraryPath = Context.environment["IMCODEC_BENCH_LIBRARY"].flatMap { $0.isEmpty ? nil : $0 } ?? ".."

let package = Package(
    name: "IMCodecBenchmarks",
    dependencies: [
        .package(name: "IMCodec", path: libraryPath),
        // The comparison: apple/swift-protobuf with code generated from the same Schemas/
        // (Sources/SwiftProtobufSchemas, made by Scripts/generate-swift-protobuf).
        .package(url: "https://github.com/apple/swift-protobuf", exact: "1.39.0"),
    ],
    targets: [
        // Raw protobuf-c loops in C: unpack + free_unpacked, unpack into an arena, get_packed_size + pack.
        .target(
            name: "CProtobufCBench",
            dependencies: [.product(name: "IMCodec", package: "IMCodec")]
        ),
        // swift-protobuf's generated code for Schemas/imcodec/v1. DO NOT EDIT: regenerate.
        .target(
            name: "SwiftProtobufSchemas",
            dependencies: [.product(name: "SwiftProtobuf", package: "swift-protobuf")]
        ),
        // The harness: corpus generator, every measured path, the table and the JSON.
        .executableTarget(
            name: "imcodec-bench",
            dependencies: [
                .product(name: "IMCodec", package: "IMCodec"),
                // Test-only: the seeded generator the corpus draws from (SeededGenerator).
                .product(name: "IMCodecTestSupport", package: "IMCodec"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                "SwiftProtobufSchemas",
                "CProtobufCBench",
                // Test-only: counts allocation calls per thread (interposes the allocator).
                .product(name: "IMCodecAllocationCounter", package: "IMCodec"),
            ],
            path: "Sources/IMCodecBench"
        ),
    ]
)
