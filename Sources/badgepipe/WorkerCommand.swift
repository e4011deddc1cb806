import AMQPClient
import ArgumentParser
import BadgeCore
import BadgeDelivery
import BadgeOperations
import BadgeStore
import BadgeWire
import BadgeWorker
import Foundation
import Logging
import Metrics
import NIOCore
import Prometheus
import ProviderAuth
import ServiceLifecycle

/// `badgepipe worker`.
struct WorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "worker", abstract: "Consume events, update counts, send badge-bearing pushes (until SIGTERM).")

    @OptionGroup var broker: BrokerOptions
    @OptionGroup var brokerVersion: BrokerVersionOptions
    @Option(help: "postgres://… or sqlite:PATH (BADGEPIPE_DATABASE_URL, default sqlite:badgepipe.sqlite).")
    var databaseURL: String?
    @Option(help: "APNs URL for production devices (BADGEPIPE_APNS_URL, default https://api.push.apple.com).")
    var apnsURL: String?
    @Option(
        help: ArgumentHelp(
            "APNs URL for sandbox devices (BADGEPIPE_APNS_SANDBOX_URL).",
            discussion:
                "Default: https://api.sandbox.push.apple.com, or --apns-url when only that is set to a host other "
                + "than Apple's (a local sink serves both environments)."))
    var apnsSandboxURL: String?
    @Option(help: "APNs token-auth key, a .p8 file (BADGEPIPE_APNS_KEY_FILE).") var apnsKeyFile: String?
    @Option(help: "The .p8 key's id (BADGEPIPE_APNS_KEY_ID).") var apnsKeyID: String?
    @Option(help: "Apple developer team id (BADGEPIPE_APNS_TEAM_ID).") var apnsTeamID: String?
    @Option(help: "APNs client certificate, PEM (BADGEPIPE_APNS_CERT_FILE), instead of a key.") var apnsCertFile:
        String?
    @Option(help: "The client certificate's private key, PEM (BADGEPIPE_APNS_CERT_KEY_FILE).")
    var apnsCertKeyFile: String?
    @Option(help: "FCM v1 base URL (BADGEPIPE_FCM_URL, default https://fcm.googleapis.com).") var fcmURL: String?
    @Option(help: "FCM service-account JSON file (BADGEPIPE_FCM_CREDENTIALS_FILE).") var fcmCredentialsFile: String?
    @Option(
        help: ArgumentHelp(
            "The apps this deployment serves, a YAML file (BADGEPIPE_APPS_FILE), instead of the single-app settings.",
            discussion:
                "Each app with its APNs key or certificate, team and topics, and/or its FCM service account; see the "
                + "README's Several apps. The provider URLs still apply to every app."))
    var appsFile: String?
    @Option(help: "Extra trusted root certificates, PEM (BADGEPIPE_CA_FILE), e.g. a test sink's.") var caFile: String?
    @Option(help: "HTTP/2 connections per provider host (BADGEPIPE_PROVIDER_CONNECTIONS, default 1).")
    var providerConnections: Int?
    @Option(help: "Milliseconds a provider request may take (BADGEPIPE_PROVIDER_TIMEOUT_MS, default 10000).")
    var providerTimeout: Int?
    @Option(help: "unseen or unread (BADGEPIPE_BADGE_POLICY).") var badgePolicy: String?
    @Option(
        help: """
            Default APNs topic, your app's bundle id (BADGEPIPE_APNS_TOPIC, default com.example.app for a local \
            sink; required with APNs credentials).
            """)
    var apnsTopic: String?
    @Option(help: "FCM project (BADGEPIPE_FCM_PROJECT, default the credentials file's, else badgepipe).")
    var fcmProject: String?
    @Option(help: "Partition queues (BADGEPIPE_PARTITIONS, default \(Topology.defaultPartitions)).") var partitions:
        Int?
    @Option(
        help: "Events per database transaction (BADGEPIPE_BATCH_SIZE, default \(WorkerConfiguration.defaultBatchSize))."
    )
    var batchSize: Int?
    @Option(
        help: """
            Least milliseconds between two ingestion transactions of the worker while batches are not full \
            (BADGEPIPE_INGESTION_INTERVAL_MS, default 40; 0: each as soon as a batch is there).
            """)
    var ingestionInterval: Int?
    @Option(
        help: """
            Event-loop threads of the worker's network clients (BADGEPIPE_EVENT_LOOPS, default 1; scale out with \
            more workers).
            """)
    var eventLoops: Int?
    @Option(
        help: """
            Active devices a user keeps; a registration beyond it drops the one registered longest ago \
            (BADGEPIPE_MAX_DEVICES_PER_USER, default 100).
            """)
    var maxDevicesPerUser: Int?
    @Option(
        help: """
            Message bytes a worker holds unacked at most, in MiB, shared by its partitions: each partition's \
            prefetch follows its messages' size (BADGEPIPE_MAX_MIB_IN_FLIGHT, default 64).
            """)
    var maxMiBInFlight: Int?
    @Option(
        help: """
            Pushes in flight at once per partition (BADGEPIPE_SEND_CONCURRENCY, default \
            \(WorkerConfiguration.defaultSendConcurrency)).
            """)
    var sendConcurrency: Int?
    @Option(
        help: """
            Most pushes one delivery round claims, and so the most a crash can leave sent but not recorded per \
            partition (BADGEPIPE_DELIVERY_ROUND_SIZE, default \(WorkerConfiguration.defaultDeliveryRoundSize)).
            """)
    var deliveryRoundSize: Int?
    @Option(
        help: """
            Milliseconds between a partition's looks at pushes held back (by an earlier push of their device in \
            another partition, say); a partition with none held back does not poll \
            (BADGEPIPE_DELIVERY_HELD_BACK_POLL_MS, default \(WorkerConfiguration.defaultDeliveryHeldBackPollMilliseconds)).
            """)
    var deliveryHeldBackPoll: Int?
    @Option(
        help: """
            Milliseconds a delivery round's outcomes may wait to be recorded with the partition's next claim, after \
            which they are recorded on their own; a crash sends again what went out in that time, with the same \
            apns-id (BADGEPIPE_DELIVERY_RECORD_DELAY_MS, default \(WorkerConfiguration.defaultDeliveryRecordDelayMilliseconds)).
            """)
    var deliveryRecordDelay: Int?
    @Option(help: "Fleet worker id (BADGEPIPE_WORKER_ID, default host-pid-random).") var workerID: String?
    @Option(
        help: """
            Partition lease TTL in ms, the failover time (BADGEPIPE_LEASE_TTL_MS, default \
            \(WorkerConfiguration.Fleet.defaultLeaseTTLMilliseconds)).
            """)
    var leaseTTL: Int?
    @OptionGroup var log: LogOptions
    @Option(
        help: """
            Delete processed event ids, read tombstones, read notifications and read messages older than this many \
            days (BADGEPIPE_RETENTION_DAYS, default 30; 0 keeps everything).
            """)
    var retentionDays: Int?
    @Option(help: "Seconds between retention passes (BADGEPIPE_RETENTION_INTERVAL, default 600).")
    var retentionInterval: Int?
    @Option(
        help: """
            Seconds SIGTERM waits for the batch and delivery round in progress before it cancels them \
            (BADGEPIPE_SHUTDOWN_TIMEOUT, default 30).
            """)
    var shutdownTimeout: Int?
    @Option(help: "Operations listener address (BADGEPIPE_METRICS_HOST, default 127.0.0.1).") var metricsHost: String?
    @Option(help: "Serve /metrics, /healthz and /readyz on this port (BADGEPIPE_METRICS_PORT, default off).")
    var metricsPort: Int?

    /// One event-loop thread per worker by default. A worker's network work (PostgreSQL, the providers, the
    /// operations listener) is small next to what the machine's other processes do, and a fleet scales by
    /// processes: with one loop thread instead of one per core, a worker wakes fewer threads per event (the figures
    /// are in `docs/performance.md`).
    static let defaultEventLoops = 1

    func run() async throws {
        // Before anything uses SwiftNIO's shared event loops (the database, HTTP and operations clients all do).
        NIOSingletons.groupLoopCountSuggestion = try Settings.integer(
            eventLoops, "BADGEPIPE_EVENT_LOOPS", name: "--event-loops", default: WorkerCommand.defaultEventLoops,
            range: 1...64)
        let logger = try log.logger("badgepipe.worker")
        let policyText = Settings.value(badgePolicy, "BADGEPIPE_BADGE_POLICY", default: "unseen")
        guard let policy = BadgePolicy(rawValue: policyText) else {
            throw CommandError(
                code: .invalidPolicy, message: "badge policy must be unseen or unread, not \(policyText)")
        }
        let delivery = try deliveryConfiguration()
        var configuration = WorkerConfiguration(
            amqp: try broker.configuration(defaultHeartbeatSeconds: WorkerConfiguration.defaultHeartbeatSeconds),
            databaseURL: Settings.value(databaseURL, "BADGEPIPE_DATABASE_URL", default: "sqlite:badgepipe.sqlite"),
            delivery: delivery,
            badgePolicy: policy,
            apnsTopic: Settings.value(apnsTopic, "BADGEPIPE_APNS_TOPIC", default: "com.example.app"),
            fcmProject: Settings.optional(fcmProject, "BADGEPIPE_FCM_PROJECT") ?? delivery.fcmCredentials?.projectID
                ?? "badgepipe",
            topology: broker.topology(
                partitions: try Settings.integer(
                    partitions, "BADGEPIPE_PARTITIONS", name: "--partitions", default: Topology.defaultPartitions,
                    range: 1...1024)),
            batchSize: try Settings.integer(
                batchSize, "BADGEPIPE_BATCH_SIZE", name: "--batch-size", default: WorkerConfiguration.defaultBatchSize,
                range: 1...10_000))
        configuration.allowUnstableRouting = brokerVersion.allowed
        configuration.sendConcurrency = try Settings.integer(
            sendConcurrency, "BADGEPIPE_SEND_CONCURRENCY", name: "--send-concurrency",
            default: WorkerConfiguration.defaultSendConcurrency, range: 1...1024)
        configuration.deliveryRoundSize = try Settings.integer(
            deliveryRoundSize, "BADGEPIPE_DELIVERY_ROUND_SIZE", name: "--delivery-round-size",
            default: WorkerConfiguration.defaultDeliveryRoundSize, range: 1...10_000)
        configuration.deliveryHeldBackPoll = .milliseconds(
            try Settings.integer(
                deliveryHeldBackPoll, "BADGEPIPE_DELIVERY_HELD_BACK_POLL_MS", name: "--delivery-held-back-poll",
                default: WorkerConfiguration.defaultDeliveryHeldBackPollMilliseconds, range: 10...60_000))
        configuration.deliveryRecordDelay = .milliseconds(
            try Settings.integer(
                deliveryRecordDelay, "BADGEPIPE_DELIVERY_RECORD_DELAY_MS", name: "--delivery-record-delay",
                default: WorkerConfiguration.defaultDeliveryRecordDelayMilliseconds, range: 0...1000))
        configuration.ingestionInterval = .milliseconds(
            try Settings.integer(
                ingestionInterval, "BADGEPIPE_INGESTION_INTERVAL_MS", name: "--ingestion-interval",
                default: WorkerConfiguration.defaultIngestionIntervalMilliseconds, range: 0...1000))
        configuration.maxDevicesPerUser = try Settings.integer(
            maxDevicesPerUser, "BADGEPIPE_MAX_DEVICES_PER_USER", name: "--max-devices-per-user",
            default: ApplyContext.defaultMaxDevicesPerUser, range: 1...10_000)
        configuration.maxBytesInFlight =
            try Settings.integer(
                maxMiBInFlight, "BADGEPIPE_MAX_MIB_IN_FLIGHT", name: "--max-mib-in-flight",
                default: WorkerConfiguration.defaultMaxBytesInFlight >> 20, range: 1...65_536) << 20
        // On PostgreSQL several workers may run: partitions are leased through the database.
        if configuration.databaseURL.lowercased().hasPrefix("postgres") {
            // host-pid-random: a container restarted by its engine keeps its hostname and often its pid, and must
            // still be a new worker, not the heir of its previous life's leases.
            let id = Settings.value(
                workerID, "BADGEPIPE_WORKER_ID",
                default: "\(ProcessInfo.processInfo.hostName)-\(ProcessInfo.processInfo.processIdentifier)-"
                    + String(UInt16.random(in: 0...UInt16.max), radix: 16))
            let ttl = try Settings.integer(
                leaseTTL, "BADGEPIPE_LEASE_TTL_MS", name: "--lease-ttl",
                default: Int(WorkerConfiguration.Fleet.defaultLeaseTTLMilliseconds), range: 500...600_000)
            configuration.fleet = WorkerConfiguration.Fleet(workerID: id, leaseTTLMilliseconds: Int64(ttl))
        }
        // Retention: 30 days by default, 0 keeps everything.
        let retentionDays = try Settings.integer(
            retentionDays, "BADGEPIPE_RETENTION_DAYS", name: "--retention-days",
            default: Retention.Configuration.defaultDays, range: 0...36_500)
        let retentionInterval = try Settings.integer(
            retentionInterval, "BADGEPIPE_RETENTION_INTERVAL", name: "--retention-interval", default: 600,
            range: 1...86_400)
        // The operations listener is off unless a port is given.
        var port: Int?
        if metricsPort != nil || Settings.optional(nil, "BADGEPIPE_METRICS_PORT") != nil {
            port = try Settings.integer(
                metricsPort, "BADGEPIPE_METRICS_PORT", name: "--metrics-port", default: 0, range: 1...65535)
        }
        let registry = PrometheusCollectorRegistry()
        if port != nil {
            var factory = PrometheusMetricsFactory(registry: registry)
            factory.valueHistogramBuckets["badgepipe_batch_size"] = [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 5000]
            MetricsSystem.bootstrap(factory)
        }
        let store = try StoreFactory.make(url: configuration.databaseURL, logger: logger)
        let worker = Worker(configuration: configuration, store: store, logger: logger, exitWhenStuckFor: .seconds(30))
        // Services shut down in reverse order: the worker first (its batches and rounds in progress finish), then
        // the operations listener (which answers while the worker drains), then the store.
        var services: [any Service] = [SecondSignal(), StoreService(store: store)]
        // Always, metrics served or not: its samples also keep the outbox's planner statistics (see `OutboxGauges`).
        services.append(OutboxGauges(store: store, health: worker.health, logger: logger))
        // A newer badgepipe may migrate the database past this one while it runs: it stops writing then.
        services.append(
            SchemaWatch(
                store: store,
                interval: .seconds(
                    try Settings.integer(
                        nil, "BADGEPIPE_SCHEMA_CHECK_INTERVAL", name: "BADGEPIPE_SCHEMA_CHECK_INTERVAL",
                        default: Int(SchemaWatch.defaultInterval.components.seconds), range: 1...3600)),
                logger: logger))
        if let port {
            let health = worker.health
            services.append(
                OperationsServer(
                    host: Settings.value(metricsHost, "BADGEPIPE_METRICS_HOST", default: "127.0.0.1"), port: port,
                    registry: registry,
                    live: {
                        let (live, detail) = health.liveness
                        return OperationsServer.Check(ok: live, reasons: live ? [] : [detail])
                    },
                    ready: {
                        let (ready, reasons) = health.readiness
                        return OperationsServer.Check(ok: ready, reasons: reasons)
                    }, logger: logger))
        }
        if retentionDays > 0 {
            services.append(
                Retention(
                    store: store,
                    configuration: Retention.Configuration(
                        age: Retention.Configuration.age(days: retentionDays), interval: .seconds(retentionInterval),
                        fleet: configuration.fleet.map { ($0.workerID, $0.leaseTTLMilliseconds) }),
                    logger: logger))
        }
        services.append(worker)
        // SIGTERM: the batch and delivery round in progress finish (what they sent is recorded), within the bound;
        // past it, everything in progress is cancelled: what was not acked comes back from the broker, and a push
        // that went out but was not recorded is sent again with the same apns-id. A second SIGTERM or SIGINT does
        // that at once (see `ShutdownSignals`).
        let bound = try Settings.integer(
            shutdownTimeout, "BADGEPIPE_SHUTDOWN_TIMEOUT", name: "--shutdown-timeout", default: 30, range: 1...3600)
        var groupConfiguration = ServiceGroupConfiguration(
            services: services.map { ServiceGroupConfiguration.ServiceConfiguration(service: $0) },
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger)
        groupConfiguration.maximumGracefulShutdownDuration = .seconds(bound)
        // Above SQLite's 10 s busy timeout, which a statement in progress may still be waiting out.
        groupConfiguration.maximumCancellationDuration = .seconds(15)
        let group = ServiceGroup(configuration: groupConfiguration)
        do {
            try await group.run()
        } catch let error as SecondSignal.Interrupted {
            logger.warning("stopped before the work in progress finished", metadata: ["worker.reason": "\(error)"])
        } catch is CancellationError {
            logger.warning(
                "stopped before the work in progress finished",
                metadata: ["worker.reason": "the shutdown bound of \(bound) s passed"])
        }
    }

    /// Provider URLs and credentials from the flags and variables; throws with the setting to fix when they do not
    /// make a working whole (no provider at all, a provider over https:// without credentials, half a key, a file
    /// that cannot be read).
    ///
    /// A provider is configured when it has credentials or a URL: APNs with a key, a certificate, `--apns-url` or
    /// `--apns-sandbox-url`; FCM with a service account or `--fcm-url`. A provider given neither is not used: an
    /// iOS-only deployment gives APNs settings only, and pushes to FCM devices are refused unsent.
    private func deliveryConfiguration() throws -> DeliveryConfiguration {
        let apnsURL = Settings.optional(self.apnsURL, "BADGEPIPE_APNS_URL")
        let sandboxURL = Settings.optional(apnsSandboxURL, "BADGEPIPE_APNS_SANDBOX_URL")
        let keyFile = Settings.optional(apnsKeyFile, "BADGEPIPE_APNS_KEY_FILE")
        let keyID = Settings.optional(apnsKeyID, "BADGEPIPE_APNS_KEY_ID")
        let teamID = Settings.optional(apnsTeamID, "BADGEPIPE_APNS_TEAM_ID")
        let certFile = Settings.optional(apnsCertFile, "BADGEPIPE_APNS_CERT_FILE")
        let certKeyFile = Settings.optional(apnsCertKeyFile, "BADGEPIPE_APNS_CERT_KEY_FILE")
        let connections = try Settings.integer(
            providerConnections, "BADGEPIPE_PROVIDER_CONNECTIONS", name: "--provider-connections", default: 1,
            range: 1...64)
        let timeout = try Settings.integer(
            providerTimeout, "BADGEPIPE_PROVIDER_TIMEOUT_MS", name: "--provider-timeout", default: 10_000,
            range: 100...300_000)

        var credentials: DeliveryConfiguration.APNsCredentials?
        func fail(_ message: String) -> CommandError { CommandError(code: .invalidCredentials, message: message) }
        if keyFile != nil || keyID != nil || teamID != nil {
            guard certFile == nil, certKeyFile == nil else {
                throw fail("give either an APNs key (--apns-key-file) or a certificate (--apns-cert-file), not both")
            }
            guard let keyFile else { throw fail("--apns-key-id and --apns-team-id need --apns-key-file") }
            guard let keyID else { throw fail("--apns-key-file needs --apns-key-id (the key's id, from Apple)") }
            guard let teamID else { throw fail("--apns-key-file needs --apns-team-id (your developer team id)") }
            do {
                credentials = .token(try APNsSigningKey(file: keyFile, keyID: keyID, teamID: teamID))
            } catch {
                throw fail("--apns-key-file: \(error)")
            }
        } else if certFile != nil || certKeyFile != nil {
            guard let certFile else { throw fail("--apns-cert-key-file needs --apns-cert-file") }
            guard let certKeyFile else { throw fail("--apns-cert-file needs --apns-cert-key-file (its private key)") }
            credentials = .certificate(chainFile: certFile, keyFile: certKeyFile)
        }
        // The example default topic is for a local sink only: Apple answers `DeviceTokenNotForTopic` for a topic
        // that is not the app's, and that answer deactivates the device for good.
        if credentials != nil, Settings.optional(apnsTopic, "BADGEPIPE_APNS_TOPIC") == nil {
            throw fail(
                "APNs credentials need --apns-topic (BADGEPIPE_APNS_TOPIC), your app's bundle id: devices registered "
                    + "without a topic are pushed with it, and Apple deactivates a device pushed with another app's")
        }
        var account: ServiceAccount?
        if let file = Settings.optional(fcmCredentialsFile, "BADGEPIPE_FCM_CREDENTIALS_FILE") {
            do {
                account = try ServiceAccount(file: file)
            } catch {
                throw fail("--fcm-credentials-file: \(error)")
            }
        }
        let fcmURL = Settings.optional(self.fcmURL, "BADGEPIPE_FCM_URL")
        var providers: Set<PushProvider> = []
        if credentials != nil || apnsURL != nil || sandboxURL != nil { providers.insert(.apns) }
        if account != nil || fcmURL != nil { providers.insert(.fcm) }
        var configuration = DeliveryConfiguration(
            apnsBaseURL: apnsURL ?? DeliveryConfiguration.appleAPNsURL,
            apnsSandboxBaseURL: sandboxURL ?? DeliveryConfiguration.defaultSandboxURL(apnsURL: apnsURL),
            fcmBaseURL: fcmURL ?? "https://fcm.googleapis.com",
            apnsCredentials: credentials, fcmCredentials: account, providers: providers,
            trustedRootsFile: Settings.optional(caFile, "BADGEPIPE_CA_FILE"), clientsPerProvider: connections,
            requestTimeout: .milliseconds(timeout))
        if let file = Settings.optional(appsFile, "BADGEPIPE_APPS_FILE") {
            // One way or the other: an app's credentials are in the file.
            guard credentials == nil, account == nil else {
                throw fail(
                    "give the apps' credentials in --apps-file, not also --apns-key-file, --apns-cert-file or "
                        + "--fcm-credentials-file")
            }
            let apps: (apps: [AppConfiguration], defaultApp: String?)
            do {
                apps = try AppsFile.load(path: file)
            } catch {
                throw CommandError(code: .invalidAppsFile, message: "--apps-file \(error)")
            }
            configuration.serve(apps: apps.apps, defaultApp: apps.defaultApp)
        }
        if let problem = configuration.problems.first { throw fail(problem) }
        return configuration
    }
}
