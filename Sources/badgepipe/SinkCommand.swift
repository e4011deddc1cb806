import ArgumentParser
import BadgeDelivery
import BadgeSink
import Logging
import Metrics
import NIOCore
import Prometheus
import ServiceLifecycle

/// `badgepipe sink`: runs the sink (`serve`, the default), or asks a running one (`wait`, `devices`).
struct SinkCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sink",
        abstract: "Run the mock APNs / FCM sink that records every push, or ask a running one.",
        subcommands: [SinkServeCommand.self, SinkWaitCommand.self, SinkDevicesCommand.self],
        defaultSubcommand: SinkServeCommand.self)
}

/// `badgepipe sink [serve]`.
struct SinkServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve", abstract: "Run the mock APNs / FCM sink that records every push (the default).")

    @Option(help: "Address to bind (BADGEPIPE_SINK_HOST, default 127.0.0.1).") var host: String?
    @Option(help: "Port (BADGEPIPE_SINK_PORT, default 8787).") var port: Int?
    @Option(
        help: ArgumentHelp(
            "A name the sink is reached by, beside loopback and --host (repeatable).",
            discussion:
                "BADGEPIPE_SINK_ALLOWED_HOSTS holds the same, comma separated. The inspection API and the web view "
                + "answer 403 to a Host (or, on a request that changes state, an Origin) that names none of them."))
    var allowedHost: [String] = []
    @Flag(help: "Print one line per push received (BADGEPIPE_SINK_LOG_DELIVERIES=1).") var logDeliveries = false
    @OptionGroup var log: LogOptions
    @Option(help: "TLS certificate, PEM: serve HTTPS with HTTP/2 and HTTP/1.1 (BADGEPIPE_SINK_TLS_CERT).")
    var tlsCert: String?
    @Option(help: "The TLS certificate's private key, PEM (BADGEPIPE_SINK_TLS_KEY).") var tlsKey: String?
    @Option(help: "Require client certificates vouched for by this PEM file (BADGEPIPE_SINK_TLS_CLIENT_CA).")
    var tlsClientCA: String?
    @Option(
        help: ArgumentHelp(
            "KID=PUBLIC_KEY.pem: check APNs provider tokens signed by that key (repeatable).",
            discussion: "BADGEPIPE_SINK_APNS_KEYS holds the same, comma separated. Without any, tokens are not checked."
        ))
    var apnsKeyID: [String] = []
    @Option(help: "The team id APNs tokens must carry as iss (BADGEPIPE_SINK_APNS_TEAM_ID, default any).")
    var apnsTeamID: String?
    @Option(
        help: ArgumentHelp(
            "FCM service account's public key, PEM (BADGEPIPE_SINK_FCM_PUBLIC_KEY).",
            discussion: "POST /token then issues access tokens for its assertions, and FCM sends need one."))
    var fcmPublicKey: String?
    @Option(
        help: ArgumentHelp(
            "The worker's apps file, YAML (BADGEPIPE_SINK_APPS_FILE): play every app it declares.",
            discussion:
                "APNs tokens are checked per key id and team with the public half of each app's .p8 key, and must "
                + "carry one of the app's topics (400 TopicDisallowed otherwise); POST /token issues access tokens "
                + "to each app's service account (its key from the service-account file), and an FCM send to an "
                + "app's project with another app's account is 403 PERMISSION_DENIED. Adds to --apns-key-id and "
                + "--fcm-public-key."))
    var appsFile: String?
    @Option(help: "Seconds a /token access token lives (BADGEPIPE_SINK_FCM_TOKEN_LIFETIME, default 3600).")
    var fcmTokenLifetime: Int?
    @Option(help: "Deliveries kept, the oldest dropped beyond (BADGEPIPE_SINK_MAX_DELIVERIES, default 1000000).")
    var maxDeliveries: Int?
    @Option(
        help: "Bytes of deliveries kept, the oldest dropped beyond (BADGEPIPE_SINK_MAX_DELIVERY_BYTES, default 1 GiB).")
    var maxDeliveryBytes: Int?
    @Option(help: "Largest request body read (BADGEPIPE_SINK_MAX_REQUEST_BYTES, default 65536).")
    var maxRequestBytes: Int?
    @Option(help: "Requests waiting at once with ?wait= (BADGEPIPE_SINK_MAX_WAITERS, default 1024).")
    var maxWaiters: Int?
    @Option(
        help: "GET /events streams open at once, apart from the waits (BADGEPIPE_SINK_MAX_EVENT_STREAMS, default 256).")
    var maxEventStreams: Int?
    @Option(help: "Longest ?wait= in seconds; longer ones are cut (BADGEPIPE_SINK_MAX_WAIT, default 300).")
    var maxWait: Double?
    @Option(help: "Event-loop threads, where pushes are answered (BADGEPIPE_SINK_EVENT_LOOPS, default 1).")
    var eventLoops: Int?

    /// One event loop: the pushes are answered on it, and one thread woken for many connections costs less CPU a
    /// push than one per core (the figures are in `docs/performance.md`).
    static let defaultEventLoops = 1

    func run() async throws {
        // Before anything uses SwiftNIO's shared event loops (the server does).
        NIOSingletons.groupLoopCountSuggestion = try Settings.integer(
            eventLoops, "BADGEPIPE_SINK_EVENT_LOOPS", name: "--event-loops", default: Self.defaultEventLoops,
            range: 1...64)
        let logger = try log.logger("badgepipe.sink")
        var keys: [String: String] = [:]
        let keyList =
            apnsKeyID.isEmpty
            ? (Settings.optional(nil, "BADGEPIPE_SINK_APNS_KEYS")?.split(separator: ",").map(String.init) ?? [])
            : apnsKeyID
        for entry in keyList {
            let parts = entry.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
                throw CommandError(
                    code: .invalidSetting, message: "--apns-key-id takes KID=PUBLIC_KEY.pem, not \(entry)")
            }
            keys[parts[0]] = parts[1]
        }
        var configuration = SinkConfiguration(
            host: Settings.value(host, "BADGEPIPE_SINK_HOST", default: "127.0.0.1"),
            port: try Settings.integer(port, "BADGEPIPE_SINK_PORT", name: "--port", default: 8787, range: 0...65535),
            logDeliveries: logDeliveries || Settings.value(nil, "BADGEPIPE_SINK_LOG_DELIVERIES", default: "0") == "1",
            tlsCertificateFile: Settings.optional(tlsCert, "BADGEPIPE_SINK_TLS_CERT"),
            tlsKeyFile: Settings.optional(tlsKey, "BADGEPIPE_SINK_TLS_KEY"),
            tlsClientCAFile: Settings.optional(tlsClientCA, "BADGEPIPE_SINK_TLS_CLIENT_CA"),
            apnsKeyFiles: keys,
            apnsTeamID: Settings.optional(apnsTeamID, "BADGEPIPE_SINK_APNS_TEAM_ID"),
            fcmPublicKeyFile: Settings.optional(fcmPublicKey, "BADGEPIPE_SINK_FCM_PUBLIC_KEY"),
            fcmTokenLifetime: try Settings.integer(
                fcmTokenLifetime, "BADGEPIPE_SINK_FCM_TOKEN_LIFETIME", name: "--fcm-token-lifetime", default: 3600,
                range: 1...86_400),
            maxDeliveries: try Settings.integer(
                maxDeliveries, "BADGEPIPE_SINK_MAX_DELIVERIES", name: "--max-deliveries", default: 1_000_000,
                range: 1...100_000_000),
            maxDeliveryBytes: try Settings.integer(
                maxDeliveryBytes, "BADGEPIPE_SINK_MAX_DELIVERY_BYTES", name: "--max-delivery-bytes",
                default: SinkConfiguration.defaultMaxDeliveryBytes, range: 4096...(1 << 40)),
            maxRequestBytes: try Settings.integer(
                maxRequestBytes, "BADGEPIPE_SINK_MAX_REQUEST_BYTES", name: "--max-request-bytes",
                default: SinkConfiguration.defaultMaxRequestBytes, range: 4096...(64 << 20)),
            maxWaiters: try Settings.integer(
                maxWaiters, "BADGEPIPE_SINK_MAX_WAITERS", name: "--max-waiters",
                default: SinkConfiguration.defaultMaxWaiters, range: 1...100_000),
            maxEventStreams: try Settings.integer(
                maxEventStreams, "BADGEPIPE_SINK_MAX_EVENT_STREAMS", name: "--max-event-streams",
                default: SinkConfiguration.defaultMaxEventStreams, range: 1...100_000),
            maxWaitSeconds: try Self.maxWaitSeconds(maxWait))
        configuration.allowedHosts =
            allowedHost.isEmpty
            ? (Settings.optional(nil, "BADGEPIPE_SINK_ALLOWED_HOSTS")?.split(separator: ",").map {
                String($0.filter { !$0.isWhitespace })
            } ?? [])
            : allowedHost
        if let file = Settings.optional(appsFile, "BADGEPIPE_SINK_APPS_FILE") {
            configuration.apps = try Self.apps(file: file)
            logger.info(
                "sink plays the apps of the apps file",
                metadata: [
                    "sink.apps_file": "\(file)",
                    "sink.apps": "\(configuration.apps.map(\.name).joined(separator: ","))",
                ])
        }
        // Metrics on the sink's own port (`GET /metrics`).
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        let server = try SinkServer(configuration: configuration, logger: logger, metrics: registry) { port in
            logger.info("sink listening", metadata: ["sink.port": "\(port)"])
        }
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [ServiceGroupConfiguration.ServiceConfiguration(service: server)],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger))
        try await group.run()
    }

    /// The apps of the worker's apps file, as the sink plays them: each APNs key's public half (from its `.p8`) with
    /// its team and the app's topics, each service account's public key (from its JSON file) with the app's project.
    /// An app with an APNs certificate gets its topics only: the sink checks certificates with `--tls-client-ca`.
    static func apps(file: String) throws -> [SinkApp] {
        let declared: [AppConfiguration]
        do {
            declared = try AppsFile.load(path: file).apps
        } catch {
            throw CommandError(code: .invalidAppsFile, message: "--apps-file \(error)")
        }
        return declared.map { app in
            var sinkApp = SinkApp(name: app.name, apnsTopics: Set(app.apns?.topics ?? []))
            if case .token(let key) = app.apns?.credentials {
                sinkApp.apnsKeys = [
                    SinkApp.APNsKey(keyID: key.keyID, teamID: key.teamID, publicKeyPEM: key.publicKeyPEM)
                ]
            }
            if let project = app.fcm?.project { sinkApp.fcmProjects = [project] }
            if let account = app.fcm?.credentials {
                sinkApp.fcmAccountKeys = [account.clientEmail: account.publicKeyPEM]
            }
            return sinkApp
        }
    }

    /// `--max-wait` / `BADGEPIPE_SINK_MAX_WAIT`: 0 to 300 seconds, 300 by default.
    private static func maxWaitSeconds(_ flag: Double?) throws -> Double {
        let text = flag.map { String($0) } ?? Settings.optional(nil, "BADGEPIPE_SINK_MAX_WAIT")
        guard let text else { return 300 }
        guard let seconds = Double(text), seconds >= 0, seconds <= 300 else {
            throw CommandError(
                code: .invalidSetting, message: "--max-wait (BADGEPIPE_SINK_MAX_WAIT) must be 0 to 300 s, not \(text)"
            )
        }
        return seconds
    }
}
