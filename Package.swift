// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "IMCodec",
    products: [
        .library(name: "IMCodec", targets: ["IMCodec"]),
        .executable(name: "imcodec", targets: ["imcodec"]),
        .library(name: "IMCodecNIO", targets: ["IMCodecNIO"]),
        .executable(name: "imcodec-relay", targets: ["imcodec-relay"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        // `swift package generate-documentation --target IMCodec` builds the DocC catalog.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // The system protobuf-c runtime (apt: libprotobuf-c-dev).
        .systemLibrary(
            name: "CProtobufC",
            pkgConfig: "libprotobuf-c",
            providers: [.apt(["libprotobuf-c-dev"])]
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
        // The Swift library. Only Sources/IMCodec/Bridge/ imports the C modules.
        .target(
            name: "IMCodec",
            dependencies: ["CProtobufC", "CIMCodecRuntime", "CIMCodecSchemas"]
        ),
        // The `imcodec` command-line tool.
        .executableTarget(
            name: "imcodec",
            dependencies: [
                "IMCodec",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // SwiftNIO frame codec handlers for IMCodec (the core library does not depend on NIO).
        .target(
            name: "IMCodecNIO",
            dependencies: [
                "IMCodec",
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        // The `imcodec-relay` example: a loopback relay server and a chat client on IMCodecNIO.
        .executableTarget(
            name: "imcodec-relay",
            dependencies: [
                "IMCodec",
                "IMCodecNIO",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            exclude: ["README.md"]
        ),
        .testTarget(
            name: "IMCodecNIOTests",
            dependencies: [
                "IMCodec",
                "IMCodecNIO",
                "imcodec-relay",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOTestUtils", package: "swift-nio"),
            ]
        ),
        // One decode measured in a process of its own, for HardeningTests' heap bounds.
        .executableTarget(
            name: "imcodec-heap-probe",
            dependencies: ["IMCodec", "CIMCodecRuntime"],
            path: "Tests/HeapProbe"
        ),
        .testTarget(
            name: "IMCodecTests",
            // `imcodec` and `imcodec-heap-probe` are built for the tests that run them (CLITests,
            // HardeningTests).
            dependencies: [
                "IMCodec", "imcodec", "imcodec-heap-probe", "CIMCodecRuntime", "CProtobufC", "CIMCodecSchemas",
            ]
        ),
    ]
)
