import AMQPClient
import ArgumentParser
import BadgeAPI
import BadgeCore
import BadgeStore
import BadgeWorker
import Foundation
import Logging
import Metrics
import Prometheus
import ServiceLifecycle

/// `badgepipe api`: the app's API (contract section 7).
struct APICommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "api",
        abstract: "Serve the app's API: counts, notifications, writes and a live stream (until SIGTERM).",
        subcommands: [Serve.self, Token.self], defaultSubcommand: Serve.self)

    /// The keys tokens are verified with, shared by `serve` and `token`.
    struct KeyOptions: ParsableArguments {
        @Option(help: "HS256 secret, a file (BADGEPIPE_JWT_SECRET_FILE).") var jwtSecretFile: String?
        @Option(
            help: "ES256 or RS256 public key as KID=PEM_FILE, repeatable (BADGEPIPE_JWT_PUBLIC_KEYS, comma-separated).")
        var jwtPublicKey: [String] = []
        @Option(help: "The audience tokens must name (BADGEPIPE_JWT_AUDIENCE).") var jwtAudience: String?

        var audience: String? { Settings.optional(jwtAudience, "BADGEPIPE_JWT_AUDIENCE") }

        /// The secret's bytes (the file's content, a final newline left out), when configured.
        func secret() throws -> [UInt8]? {
            guard let path = Settings.optional(jwtSecretFile, "BADGEPIPE_JWT_SECRET_FILE") else { return nil }
            guard var bytes = FileManager.default.contents(atPath: path).map(Array.init) else {
                throw CommandError(code: .badFile, message: "cannot read the JWT secret file \(path)")
            }
            while bytes.last == 0x0A || bytes.last == 0x0D { bytes.removeLast() }
            guard bytes.count >= 32 else {
                throw CommandError(code: .invalidSetting, message: "the JWT secret must be at least 32 bytes")
            }
            return bytes
        }

        func keys() throws -> [TokenVerifier.Key] {
            var keys: [TokenVerifier.Key] = []
            if let secret = try secret() { keys.append(.hs256(secret: secret, kid: nil)) }
            var entries = jwtPublicKey
            if entries.isEmpty, let variable = Settings.optional(nil, "BADGEPIPE_JWT_PUBLIC_KEYS") {
                entries = variable.split(separator: ",").map(String.init)
            }
            for entry in entries {
                guard let equals = entry.firstIndex(of: "=") else {
                    throw CommandError(code: .invalidSetting, message: "--jwt-public-key takes KID=PEM_FILE")
                }
                let kid = String(entry[..<equals])
                let path = String(entry[entry.index(after: equals)...])
                guard let pem = FileManager.default.contents(atPath: path).map({ String(decoding: $0, as: UTF8.self) })
                else { throw CommandError(code: .badFile, message: "cannot read the public key file \(path)") }
                keys.append(.publicKey(pem: pem, kid: kid.isEmpty ? nil : kid))
            }
            guard !keys.isEmpty else {
                throw CommandError(
                    code: .invalidSetting,
                    message: "the API needs --jwt-secret-file or --jwt-public-key to verify tokens")
            }
            return keys
        }
    }

    struct Serve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "serve", abstract: "Serve the API.")

        @OptionGroup var broker: BrokerOptions
        @OptionGroup var keys: KeyOptions
        @OptionGroup var log: LogOptions
        @Option(name: WorkerSettings.databaseURL.optionName, help: WorkerSettings.databaseURL.help)
        var databaseURL: String?
        @Option(help: "Address to listen on (BADGEPIPE_API_HOST, default 127.0.0.1).") var host: String?
        @Option(help: "Port (BADGEPIPE_API_PORT, default 8080).") var port: Int?
        @Option(name: WorkerSettings.badgePolicy.optionName, help: WorkerSettings.badgePolicy.help)
        var badgePolicy: String?
        @Option(
            help:
                "Open streams per instance (BADGEPIPE_API_MAX_STREAMS, default \(APIConfiguration.defaultMaxStreams)).")
        var maxStreams: Int?
        @Option(
            help:
                "Open streams per user (BADGEPIPE_API_MAX_STREAMS_PER_USER, default \(APIConfiguration.defaultMaxStreamsPerUser))."
        )
        var maxStreamsPerUser: Int?
        @Flag(
            help:
                "Serve the demo app's page at /demo, for development: it signs in with a development token (BADGEPIPE_API_DEMO=1)."
        )
        var demo = false

        func run() async throws {
            let logger = try log.logger("badgepipe.api")
            let policyText = WorkerSettings.badgePolicy.value(badgePolicy)
            guard let policy = BadgePolicy(rawValue: policyText) else {
                throw CommandError(
                    code: .invalidPolicy, message: "badge policy must be unseen or unread, not \(policyText)")
            }
            var configuration = APIConfiguration(
                host: Settings.value(host, "BADGEPIPE_API_HOST", default: "127.0.0.1"),
                port: try Settings.integer(port, "BADGEPIPE_API_PORT", name: "--port", default: 8080, range: 0...65535),
                badgePolicy: policy, amqp: try AMQPConfiguration(url: broker.url),
                exchange: broker.topology().exchange)
            configuration.maxStreams = try Settings.integer(
                maxStreams, "BADGEPIPE_API_MAX_STREAMS", name: "--max-streams",
                default: APIConfiguration.defaultMaxStreams, range: 1...1_000_000)
            configuration.maxStreamsPerUser = try Settings.integer(
                maxStreamsPerUser, "BADGEPIPE_API_MAX_STREAMS_PER_USER", name: "--max-streams-per-user",
                default: APIConfiguration.defaultMaxStreamsPerUser, range: 1...1000)
            configuration.demo = demo || Settings.value(nil, "BADGEPIPE_API_DEMO", default: "0") == "1"
            let verifier = try await TokenVerifier(keys: keys.keys(), audience: keys.audience)
            let registry = PrometheusCollectorRegistry()
            MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
            let store = try StoreFactory.make(
                url: WorkerSettings.databaseURL.value(databaseURL),
                logger: logger)
            guard let reads = store as? any AppReads else {
                throw CommandError(code: .invalidSetting, message: "this database does not serve the app's reads")
            }
            let watcher = CountsWatcher(reads: reads, policy: policy, logger: logger)
            let server = APIServer(
                configuration: configuration, reads: reads, verifier: verifier, watcher: watcher, logger: logger,
                metrics: registry)
            let group = ServiceGroup(
                configuration: ServiceGroupConfiguration(
                    services: [StoreService(store: store), watcher, server],
                    gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
            try await group.run()
        }
    }

    struct Token: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "token",
            abstract: "Print a development token for a user, signed with the configured HS256 secret.")

        @OptionGroup var keys: KeyOptions
        @Option(help: "The user (the token's sub).") var user: String
        @Option(help: "Seconds the token is valid (default 3600).") var lifetime: Int = 3600

        func run() async throws {
            guard let secret = try keys.secret() else {
                throw CommandError(code: .invalidSetting, message: "api token needs --jwt-secret-file")
            }
            print(
                try await DevelopmentToken.sign(
                    user: user, secret: secret, lifetime: TimeInterval(lifetime), audience: keys.audience))
        }
    }
}
