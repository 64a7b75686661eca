// swift-tools-version: 6.1
import PackageDescription

// A package that depends on the IMCodec library resolves nothing else: SwiftNIO and
// swift-argument-parser are needed only by the targets behind the traits below, which are off by
// default, and SwiftPM leaves the dependencies of disabled traits out of resolution.
//
//   NIO    the IMCodecNIO library (SwiftNIO frame handlers):
//          .package(url: ".../IMCodec", from: "…", traits: ["NIO"])
//   Tools  the `imcodec` tool and the `imcodec-relay` example (enables NIO); this repository's
//          scripts build with it: swift build --traits Tools
//
// Built without its trait, a target compiles to nothing (its sources are inside `#if NIO` /
// `#if Tools`), and an executable only says which trait it needs.
let nio = TargetDependencyCondition.when(traits: ["NIO"])
let tools = TargetDependencyCondition.when(traits: ["Tools"])

let package = Package(
    name: "IMCodec",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9), .visionOS(.v1)],
    products: [
        .library(name: "IMCodec", targets: ["IMCodec"]),
        .executable(name: "imcodec", targets: ["imcodec"]),
        .library(name: "IMCodecNIO", targets: ["IMCodecNIO"]),
        .executable(name: "imcodec-relay", targets: ["imcodec-relay"]),
        // Test-only: the shared test helpers (FuzzChecks, Wire, SeededGenerator, random frames) of
        // this repository's tests, fuzz targets and benchmarks. Not API, no compatibility promise; do
        // not depend on it. A product only because SwiftPM lets another package use a target solely
        // through a product, and the separate Fuzz/ and Benchmarks/ packages (so that the library's
        // build never pays for libFuzzer or swift-protobuf) need it.
        .library(name: "IMCodecTestSupport", targets: ["IMCodecTestSupport"]),
        // Test-only: the allocation counter (interposes malloc) of the benchmark's mallocs/msg and of
        // the heap probe. Link it only into an executable made for measuring; not API.
        .library(name: "IMCodecAllocationCounter", targets: ["CAllocationCounter"]),
    ],
    traits: [
        .trait(name: "NIO", description: "The IMCodecNIO library: SwiftNIO frame handlers (depends on swift-nio)."),
        .trait(
            name: "Tools",
            description:
                "The imcodec tool and the imcodec-relay example (depend on swift-argument-parser and swift-nio).",
            enabledTraits: ["NIO"]
        ),
        .default(enabledTraits: []),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        // The relay's durable store (SQLite, Debian's libsqlite3-dev) and its login tokens (JWT).
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.7.1"),
        // The relay's PostgreSQL store (`serve --store postgresql://...`).
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.0"),
        // TLS for the relay's TCP and WebSocket listeners.
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        // The relay's graceful shutdown on SIGTERM and SIGINT, and its logs.
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // The relay's metrics (`serve --metrics-port`): swift-metrics' API, exported in Prometheus' text format.
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // `swift package generate-documentation --target IMCodec` builds the DocC catalog.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        // The relay's ids (AES, ServerIDs.swift) and the end-to-end envelope test (AES-GCM); the
        // library does no cryptography. jwt-kit already depends on it.
        .package(url: "https://github.com/apple/swift-crypto.git", "3.0.0"..<"5.0.0"),
        // The relay's queue of disappearing messages (HeapModule); postgres-nio already depends on it.
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.1.0"),
    ],
    targets: [
        // The system protobuf-c runtime (apt: libprotobuf-c-dev).
        .systemLibrary(
            name: "CProtobufC",
            pkgConfig: "libprotobuf-c",
            providers: [.apt(["libprotobuf-c-dev"]), .brew(["protobuf-c"])]
        ),
        // Hand-written C helpers: the arena allocator, the wire pre-scan, the string-field marker.
        .target(
            name: "CIMCodecRuntime",
            dependencies: ["CProtobufC"]
        ),
        // protoc-c output for Schemas/, made by Scripts/generate-schemas. Never edit by hand.
        .target(
            name: "CIMCodecSchemas",
            dependencies: ["CProtobufC", "CIMCodecRuntime"]
        ),
        // The Swift library. Only Sources/IMCodec/CSeam/ imports the C modules.
        .target(
            name: "IMCodec",
            dependencies: ["CProtobufC", "CIMCodecRuntime", "CIMCodecSchemas"],
            // The generated views (`Frame.View`, ...) are `~Escapable`; their accessors say how
            // long what they return may live (`@_lifetime`).
            swiftSettings: [
                .enableExperimentalFeature("Lifetimes"),
                // A file sees the members of only the modules it imports: code outside CSeam/,
                // which imports no C module, cannot touch a C struct's fields either.
                .enableUpcomingFeature("MemberImportVisibility"),
            ]
        ),
        // Test-only helpers shared by both test targets, Fuzz/ and Benchmarks/: the test oracles
        // (FuzzChecks), the wire builder (Wire), seeded random values (SeededGenerator,
        // RandomMessages, RandomFrames). Not part of the codec.
        .target(
            name: "IMCodecTestSupport",
            dependencies: ["IMCodec"]
        ),
        // The `imcodec` command-line tool.
        .executableTarget(
            name: "imcodec",
            dependencies: [
                "IMCodec",
                .product(name: "ArgumentParser", package: "swift-argument-parser", condition: tools),
            ]
        ),
        // SwiftNIO frame codec handlers for IMCodec, length-prefixed and WebSocket (the core library does
        // not depend on NIO).
        .target(
            name: "IMCodecNIO",
            dependencies: [
                "IMCodec",
                .product(name: "NIOCore", package: "swift-nio", condition: nio),
                .product(name: "NIOWebSocket", package: "swift-nio", condition: nio),
            ]
        ),
        // The `imcodec-relay` example: a loopback relay server and a chat client on IMCodecNIO.
        .executableTarget(
            name: "imcodec-relay",
            dependencies: [
                "IMCodec",
                "IMCodecNIO",
                .product(name: "NIOCore", package: "swift-nio", condition: tools),
                .product(name: "NIOPosix", package: "swift-nio", condition: tools),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio", condition: tools),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: tools),
                .product(name: "NIOWebSocket", package: "swift-nio", condition: tools),
                .product(name: "ArgumentParser", package: "swift-argument-parser", condition: tools),
                .product(name: "GRDB", package: "GRDB.swift", condition: tools),
                .product(name: "PostgresNIO", package: "postgres-nio", condition: tools),
                .product(name: "JWTKit", package: "jwt-kit", condition: tools),
                // Message uids and session ids (ServerIDs.swift); jwt-kit already depends on both.
                .product(name: "Crypto", package: "swift-crypto", condition: tools),
                .product(name: "CryptoExtras", package: "swift-crypto", condition: tools),
                .product(name: "HeapModule", package: "swift-collections", condition: tools),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: tools),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: tools),
                .product(name: "Logging", package: "swift-log", condition: tools),
                .product(name: "CoreMetrics", package: "swift-metrics", condition: tools),
                .product(name: "Prometheus", package: "swift-prometheus", condition: tools),
            ],
            exclude: ["README.md", "SCALING.md"]
        ),
        .testTarget(
            name: "IMCodecNIOTests",
            dependencies: [
                "IMCodec",
                "IMCodecTestSupport",
                "IMCodecNIO",
                "imcodec-relay",
                // The IMCodecNIO suites need swift-nio alone (trait NIO: what the AddressSanitizer
                // run builds); the relay's suites need the Tools trait's packages too.
                .product(name: "NIOCore", package: "swift-nio", condition: nio),
                .product(name: "NIOPosix", package: "swift-nio", condition: nio),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio", condition: nio),
                .product(name: "NIOEmbedded", package: "swift-nio", condition: nio),
                .product(name: "NIOTestUtils", package: "swift-nio", condition: nio),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: tools),
                .product(name: "NIOWebSocket", package: "swift-nio", condition: nio),
                .product(name: "Logging", package: "swift-log", condition: tools),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: tools),
                .product(name: "Crypto", package: "swift-crypto", condition: tools),
                .product(name: "PostgresNIO", package: "postgres-nio", condition: tools),
                .product(name: "GRDB", package: "GRDB.swift", condition: tools),
            ]
        ),
        // Test-only: counts allocation calls per thread and live heap bytes (interposes malloc).
        .target(
            name: "CAllocationCounter",
            path: "Tests/AllocationCounter"
        ),
        // The heap of decoding, measured in a process of its own: one decode for HardeningTests'
        // heap bounds, or the report of `Fuzz/run --heap`.
        .executableTarget(
            name: "imcodec-heap-probe",
            dependencies: ["IMCodec", "IMCodecTestSupport", "CAllocationCounter"],
            path: "Tests/HeapProbe"
        ),
        .testTarget(
            name: "IMCodecTests",
            // `imcodec` is built for the tests that run it (CLITests). imcodec-heap-probe, which
            // HardeningTests runs, is not a dependency: a test target links its executable
            // dependencies' code, and the probe's allocation counter must not interpose malloc in
            // the test process. `swift test` and `swift build --build-tests` build every target.
            dependencies: [
                "IMCodec", "IMCodecTestSupport", "imcodec", "CIMCodecRuntime", "CProtobufC", "CIMCodecSchemas",
            ]
        ),
    ]
)

// ThreadSanitizer on this package's Swift code alone (Scripts/test-sanitizers thread sets
// IMCODEC_SANITIZE=thread): every target of this package compiles and links with
// `-sanitize=thread`, the dependencies as in a plain debug build, so in the scratch path of one
// (CI's .build) only this package's modules compile again. `-Xswiftc -sanitize=thread` would
// compile every Swift module of every dependency again, about ten minutes here.
if Context.environment["IMCODEC_SANITIZE"] == "thread" {
    for target in package.targets where target.type != .system {
        target.swiftSettings = (target.swiftSettings ?? []) + [.unsafeFlags(["-sanitize=thread"])]
        target.linkerSettings = (target.linkerSettings ?? []) + [.unsafeFlags(["-sanitize=thread"])]
    }
}
