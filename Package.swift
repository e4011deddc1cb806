// swift-tools-version:6.0
import PackageDescription

/// A dependency only Linux builds take (the client library uses URLSession on Apple platforms).
let onLinux = TargetDependencyCondition.when(platforms: [.linux])

let package = Package(
    name: "badgepipe",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "badgepipe", targets: ["badgepipe"]),
        .library(name: "AMQPClient", targets: ["AMQPClient"]),
        .library(name: "BadgeCore", targets: ["BadgeCore"]),
        // A typed client of the sink's test API with its waits, for end-to-end tests written in Swift.
        .library(name: "BadgePipeTesting", targets: ["BadgePipeTesting"]),
        // The Swift client of `badgepipe api` for apps: counts as a live AsyncSequence, the list, reads, devices.
        .library(name: "BadgePipeClient", targets: ["BadgePipeClient"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.0"),
        .package(url: "https://github.com/vapor/sqlite-nio.git", from: "1.13.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.0.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.0"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.45.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.34.1"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.0"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.7.0"),
    ],
    targets: [
        // C: the system rabbitmq-c library and a shim for its variadic functions.
        .systemLibrary(
            name: "CRabbitMQ",
            pkgConfig: "librabbitmq",
            providers: [.apt(["librabbitmq-dev"])]
        ),
        // Shared primitives with no dependencies: the one backoff formula, the close signal, the time limit.
        .target(name: "BadgeSupport"),
        // The only module that imports C; exposes no C types.
        .target(
            name: "AMQPClient",
            dependencies: [
                "CRabbitMQ",
                "BadgeSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ]
        ),
        // Wire formats shared by the worker and the sink: strict JSON, RFC 3339 timestamps, provider names,
        // push payload keys. No dependencies.
        .target(name: "BadgeWire", dependencies: ["BadgeSupport"]),
        // Pure core: events, counts, badge policy, payloads. No I/O. (swift-crypto for the SHA-1 of push ids.)
        .target(
            name: "BadgeCore",
            dependencies: ["BadgeSupport", "BadgeWire", .product(name: "Crypto", package: "swift-crypto")]
        ),
        // Storage adapter: PostgreSQL for fleets, embedded SQLite for one node.
        .target(
            name: "BadgeStore",
            dependencies: [
                "BadgeCore",
                "BadgeSupport",
                "BadgeWire",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Provider credentials: APNs provider tokens (ES256) and Google OAuth2 assertions (RS256), signed and
        // verified. Used by the delivery adapter (to sign) and the sink (to verify).
        .target(
            name: "ProviderAuth",
            dependencies: [
                "BadgeSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ]
        ),
        // Delivery adapter: APNs / FCM v1 over HTTP.
        .target(
            name: "BadgeDelivery",
            dependencies: [
                "BadgeSupport",
                "BadgeCore",
                "BadgeWire",
                "ProviderAuth",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                // The apps file (`--apps-file`): YAML, whose nodes carry their line for error messages.
                .product(name: "Yams", package: "Yams"),
            ]
        ),
        // The mock APNs / FCM sink. It reads and writes the wire formats through BadgeWire and draws its faults
        // with BadgeSupport's SeededGenerator; nothing of the core.
        .target(
            name: "BadgeSink",
            dependencies: [
                "BadgeSupport",
                "BadgeWire",
                "ProviderAuth",
                "BadgeOperations",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdHTTP2", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            // The OpenAPI document and the web view, embedded in Swift at build time by the EmbedSinkAssets plugin.
            exclude: ["Assets"],
            plugins: ["EmbedSinkAssets"]
        ),
        // Build time only: embeds the files under Sources/BadgeSink/Assets in Swift (docs/architecture.md).
        .plugin(name: "EmbedSinkAssets", capability: .buildTool(), dependencies: ["SinkAssetsEmbedder"]),
        .executableTarget(name: "SinkAssetsEmbedder", path: "Plugins/SinkAssetsEmbedder"),
        // Operations: the Prometheus /metrics, /healthz and /readyz listener.
        .target(
            name: "BadgeOperations",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The app's API (`badgepipe api`, contract section 7): JWT-authenticated reads of a user's counts,
        // notifications and conversations, writes published as events with confirms, and a live stream of counts.
        .target(
            name: "BadgeAPI",
            dependencies: [
                "AMQPClient",
                "BadgeCore",
                "BadgeOperations",
                "BadgeSupport",
                "BadgeStore",
                "BadgeWire",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The worker: consume, apply, push.
        .target(
            name: "BadgeWorker",
            dependencies: [
                "AMQPClient",
                "BadgeCore",
                "BadgeSupport",
                "BadgeStore",
                "BadgeDelivery",
                "BadgeWire",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "badgepipe",
            dependencies: [
                "AMQPClient",
                "BadgeAPI",
                "BadgeCore",
                "BadgeSupport",
                "BadgeDelivery",
                "BadgeOperations",
                "BadgeWire",
                "ProviderAuth",
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Metrics", package: "swift-metrics"),
                "BadgeStore",
                "BadgePipeTesting",
                "BadgeSink",
                "BadgeWorker",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ]
        ),
        // The sink's client for users' end-to-end tests (docs/testing.md): HTTP only, no BadgePipe module.
        .target(
            name: "BadgePipeTesting",
            dependencies: [
                "BadgeSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        // The app's client of the API: URLSession on Apple platforms, async-http-client elsewhere; no other
        // BadgePipe module.
        .target(
            name: "BadgePipeClient",
            dependencies: [
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: onLinux),
                .product(name: "NIOCore", package: "swift-nio", condition: onLinux),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: onLinux),
            ]
        ),
        // Benchmark of the AMQP client alone (release build: `swift run -c release amqp-bench`).
        .executableTarget(name: "amqp-bench", dependencies: ["AMQPClient"]),
        // Pushes per second through the worker's sender to one URL (`scripts/bench --mode push`).
        .executableTarget(
            name: "push-bench",
            dependencies: ["BadgeCore", "BadgeDelivery", .product(name: "Logging", package: "swift-log")]
        ),
        // The reference model: the contract's count rules as a pure function of the published events. Only the
        // tests use it (the store implements the same rules in SQL and is checked against it).
        .target(name: "BadgeModel", dependencies: ["BadgeCore", "BadgeWire"], path: "Tests/BadgeModel"),
        // Keys and certificates made at test time (TLS for the sink, APNs .p8, FCM service account). Tests only.
        .target(
            name: "TestCredentials",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            path: "Tests/TestCredentials"
        ),
        // Where the test broker and database are (the variables `scripts/services env` prints), and how tests wait
        // (`eventually`, a clock the test moves). Tests only.
        .target(name: "TestServices", path: "Tests/TestServices"),
        // The sink on an ephemeral port of 127.0.0.1, run in the test process, with an HTTP client for it. Tests only.
        .target(
            name: "SinkTestSupport",
            dependencies: [
                "BadgeSink",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Tests/SinkTestSupport"
        ),
        .testTarget(name: "BadgeSupportTests", dependencies: ["BadgeSupport"]),
        // The testing guide's Swift example (docs/testing.md), run by scripts/testing-guide-check against a real sink
        // and worker; skipped without BADGEPIPE_SINK_URL.
        .testTarget(name: "TestingGuideExample", dependencies: ["BadgePipeTesting"], path: "docs/examples/swift"),
        .testTarget(
            name: "AMQPClientTests",
            dependencies: ["AMQPClient", "TestServices", .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "BadgeWireTests", dependencies: ["BadgeWire", "BadgeSupport"]),
        .testTarget(
            name: "BadgeCoreTests", dependencies: ["BadgeCore", "BadgeModel", "BadgeWire"],
            resources: [.copy("Fixtures")]),
        .testTarget(
            name: "BadgeStoreTests",
            dependencies: [
                "BadgeStore", "BadgeCore", "BadgeModel", "BadgeSupport", "BadgeWire", "TestServices",
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            resources: [.copy("Fixtures")]),
        .testTarget(
            name: "BadgeDeliveryTests",
            dependencies: [
                "BadgeDelivery", "BadgeCore", "BadgeWire", "ProviderAuth",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "ProviderAuthTests",
            dependencies: [
                "ProviderAuth",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ]
        ),
        // The worker's pure types (state machines, schedules, throttles), driven directly: no broker, database or
        // HTTP server.
        .testTarget(
            name: "BadgeWorkerTests",
            dependencies: ["BadgeWorker", "BadgeCore", "BadgeStore", "BadgeWire", "TestServices"]
        ),
        .testTarget(
            name: "PipelineTests",
            dependencies: [
                "BadgeAPI",
                "BadgePipeClient",
                "SinkTestSupport",
                "TestCredentials",
                "TestServices",
                "ProviderAuth",
                "AMQPClient",
                "BadgeCore",
                "BadgeDelivery",
                "BadgeSink",
                "BadgeStore",
                "BadgeWire",
                "BadgeWorker",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            resources: [.copy("Fixtures")]
        ),
        // Fleets of real worker processes under faults (needs the badgepipe executable built).
        .testTarget(
            name: "FleetTests",
            dependencies: [
                "SinkTestSupport",
                "badgepipe",
                "BadgePipeTesting",
                "TestServices",
                "AMQPClient",
                "BadgeCore",
                "BadgeSupport",
                "BadgeModel",
                "BadgeSink",
                "BadgeWire",
                "BadgeDelivery",
                "ProviderAuth",
                "TestCredentials",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "BadgeSinkTests",
            dependencies: [
                "SinkTestSupport",
                "TestServices",
                "BadgeSink",
                "BadgePipeTesting",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                "ProviderAuth",
                "TestCredentials",
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
    ]
)
