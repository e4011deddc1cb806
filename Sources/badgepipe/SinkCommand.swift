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

    // Every option's flag, variable, default and help are in the settings table (`SinkSettings`).
    @Option(name: S.host.optionName, help: S.host.help) var host: String?
    @Option(name: S.port.optionName, help: S.port.help) var port: Int?
    @Option(
        help: ArgumentHelp(
            "A name the sink is reached by, beside loopback and --host (repeatable).",
            discussion:
                "BADGEPIPE_SINK_ALLOWED_HOSTS holds the same, comma separated. The inspection API and the web view "
                + "answer 403 to a Host (or, on a request that changes state, an Origin) that names none of them."))
    var allowedHost: [String] = []
    @Flag(help: "Print one line per push received (BADGEPIPE_SINK_LOG_DELIVERIES=1).") var logDeliveries = false
    @OptionGroup var log: LogOptions
    @Option(name: S.tlsCert.optionName, help: S.tlsCert.help) var tlsCert: String?
    @Option(name: S.tlsKey.optionName, help: S.tlsKey.help) var tlsKey: String?
    @Option(name: S.tlsClientCA.optionName, help: S.tlsClientCA.help) var tlsClientCA: String?
    @Option(
        help: ArgumentHelp(
            "KID=PUBLIC_KEY.pem: check APNs provider tokens signed by that key (repeatable).",
            discussion: "BADGEPIPE_SINK_APNS_KEYS holds the same, comma separated. Without any, tokens are not checked."
        ))
    var apnsKeyID: [String] = []
    @Option(name: S.apnsTeamID.optionName, help: S.apnsTeamID.help) var apnsTeamID: String?
    @Option(name: S.fcmPublicKey.optionName, help: S.fcmPublicKey.help) var fcmPublicKey: String?
    @Option(name: S.appsFile.optionName, help: S.appsFile.help) var appsFile: String?
    @Option(name: S.fcmTokenLifetime.optionName, help: S.fcmTokenLifetime.help) var fcmTokenLifetime: Int?
    @Option(name: S.maxDeliveries.optionName, help: S.maxDeliveries.help) var maxDeliveries: Int?
    @Option(name: S.maxDeliveryBytes.optionName, help: S.maxDeliveryBytes.help) var maxDeliveryBytes: Int?
    @Option(name: S.maxRequestBytes.optionName, help: S.maxRequestBytes.help) var maxRequestBytes: Int?
    @Option(name: S.maxWaiters.optionName, help: S.maxWaiters.help) var maxWaiters: Int?
    @Option(name: S.maxEventStreams.optionName, help: S.maxEventStreams.help) var maxEventStreams: Int?
    @Option(
        help: """
            Longest ?wait= in seconds; longer ones are cut (BADGEPIPE_SINK_MAX_WAIT, default \
            \(Int(SinkConfiguration.defaultMaxWaitSeconds))).
            """)
    var maxWait: Double?
    @Option(name: S.eventLoops.optionName, help: S.eventLoops.help) var eventLoops: Int?

    /// The settings table, by a short name.
    private typealias S = SinkSettings

    func run() async throws {
        // Before anything uses SwiftNIO's shared event loops (the server does).
        NIOSingletons.groupLoopCountSuggestion = try S.eventLoops.value(eventLoops)
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
            host: S.host.value(host),
            port: try S.port.value(port),
            logDeliveries: logDeliveries || Settings.value(nil, "BADGEPIPE_SINK_LOG_DELIVERIES", default: "0") == "1",
            tlsCertificateFile: S.tlsCert.optional(tlsCert),
            tlsKeyFile: S.tlsKey.optional(tlsKey),
            tlsClientCAFile: S.tlsClientCA.optional(tlsClientCA),
            apnsKeyFiles: keys,
            apnsTeamID: S.apnsTeamID.optional(apnsTeamID),
            fcmPublicKeyFile: S.fcmPublicKey.optional(fcmPublicKey),
            fcmTokenLifetime: try S.fcmTokenLifetime.value(fcmTokenLifetime),
            maxDeliveries: try S.maxDeliveries.value(maxDeliveries),
            maxDeliveryBytes: try S.maxDeliveryBytes.value(maxDeliveryBytes),
            maxRequestBytes: try S.maxRequestBytes.value(maxRequestBytes),
            maxWaiters: try S.maxWaiters.value(maxWaiters),
            maxEventStreams: try S.maxEventStreams.value(maxEventStreams),
            maxWaitSeconds: try Self.maxWaitSeconds(maxWait))
        configuration.allowedHosts =
            allowedHost.isEmpty
            ? (Settings.optional(nil, "BADGEPIPE_SINK_ALLOWED_HOSTS")?.split(separator: ",").map {
                String($0.filter { !$0.isWhitespace })
            } ?? [])
            : allowedHost
        if let file = S.appsFile.optional(appsFile) {
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

    /// `--max-wait` / `BADGEPIPE_SINK_MAX_WAIT`: 0 to 300 seconds, `SinkConfiguration.defaultMaxWaitSeconds` by
    /// default.
    private static func maxWaitSeconds(_ flag: Double?) throws -> Double {
        let text = flag.map { String($0) } ?? Settings.optional(nil, "BADGEPIPE_SINK_MAX_WAIT")
        guard let text else { return SinkConfiguration.defaultMaxWaitSeconds }
        guard let seconds = Double(text), seconds >= 0, seconds <= 300 else {
            throw CommandError(
                code: .invalidSetting, message: "--max-wait (BADGEPIPE_SINK_MAX_WAIT) must be 0 to 300 s, not \(text)"
            )
        }
        return seconds
    }
}
