// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "badgepipe",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "badgepipe", targets: ["badgepipe"]),
        .library(name: "AMQPClient", targets: ["AMQPClient"]),
        .library(name: "BadgeCore", targets: ["BadgeCore"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
    ],
    targets: [
        // C: the system rabbitmq-c library and a shim for its variadic functions.
        .systemLibrary(
            name: "CRabbitMQ",
            pkgConfig: "librabbitmq",
            providers: [.apt(["librabbitmq-dev"])]
        ),
        // The only module that imports C; exposes no C types.
        .target(
            name: "AMQPClient",
            dependencies: [
                "CRabbitMQ",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ]
        ),
        // Pure core: events, counts, badge policy, payloads. No I/O.
        .target(name: "BadgeCore"),
        .executableTarget(
            name: "badgepipe",
            dependencies: [
                "AMQPClient",
                "BadgeCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // Benchmark of the AMQP client alone (release build: `swift run -c release amqp-bench`).
        .executableTarget(name: "amqp-bench", dependencies: ["AMQPClient"]),
        .testTarget(name: "AMQPClientTests", dependencies: ["AMQPClient"]),
        .testTarget(name: "BadgeCoreTests", dependencies: ["BadgeCore"], resources: [.copy("Fixtures")]),
    ]
)
