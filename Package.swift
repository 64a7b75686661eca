// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "IMCodec",
    products: [
        .library(name: "IMCodec", targets: ["IMCodec"]),
        .executable(name: "imcodec", targets: ["imcodec"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
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
        .testTarget(
            name: "IMCodecTests",
            dependencies: ["IMCodec", "CIMCodecRuntime", "CProtobufC", "CIMCodecSchemas"]
        ),
    ]
)
