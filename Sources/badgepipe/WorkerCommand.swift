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
    // Every option's flag, variable, default and help are in the settings table (`WorkerSettings`).
    @Option(name: S.databaseURL.optionName, help: S.databaseURL.help) var databaseURL: String?
    @Option(name: S.apnsURL.optionName, help: S.apnsURL.help) var apnsURL: String?
    @Option(name: S.apnsSandboxURL.optionName, help: S.apnsSandboxURL.help) var apnsSandboxURL: String?
    @Option(name: S.apnsKeyFile.optionName, help: S.apnsKeyFile.help) var apnsKeyFile: String?
    @Option(name: S.apnsKeyID.optionName, help: S.apnsKeyID.help) var apnsKeyID: String?
    @Option(name: S.apnsTeamID.optionName, help: S.apnsTeamID.help) var apnsTeamID: String?
    @Option(name: S.apnsCertFile.optionName, help: S.apnsCertFile.help) var apnsCertFile: String?
    @Option(name: S.apnsCertKeyFile.optionName, help: S.apnsCertKeyFile.help) var apnsCertKeyFile: String?
    @Option(name: S.fcmURL.optionName, help: S.fcmURL.help) var fcmURL: String?
    @Option(name: S.fcmCredentialsFile.optionName, help: S.fcmCredentialsFile.help) var fcmCredentialsFile: String?
    @Option(name: S.appsFile.optionName, help: S.appsFile.help) var appsFile: String?
    @Option(name: S.caFile.optionName, help: S.caFile.help) var caFile: String?
    @Option(name: S.providerConnections.optionName, help: S.providerConnections.help) var providerConnections: Int?
    @Option(name: S.providerTimeout.optionName, help: S.providerTimeout.help) var providerTimeout: Int?
    @Option(name: S.badgePolicy.optionName, help: S.badgePolicy.help) var badgePolicy: String?
    @Option(name: S.apnsTopic.optionName, help: S.apnsTopic.help) var apnsTopic: String?
    @Option(name: S.fcmProject.optionName, help: S.fcmProject.help) var fcmProject: String?
    @Option(name: S.partitions.optionName, help: S.partitions.help) var partitions: Int?
    @Option(name: S.batchSize.optionName, help: S.batchSize.help) var batchSize: Int?
    @Option(name: S.ingestionInterval.optionName, help: S.ingestionInterval.help) var ingestionInterval: Int?
    @Option(name: S.eventLoops.optionName, help: S.eventLoops.help) var eventLoops: Int?
    @Option(name: S.maxDevicesPerUser.optionName, help: S.maxDevicesPerUser.help) var maxDevicesPerUser: Int?
    @Option(name: S.maxMiBInFlight.optionName, help: S.maxMiBInFlight.help) var maxMiBInFlight: Int?
    @Option(name: S.sendConcurrency.optionName, help: S.sendConcurrency.help) var sendConcurrency: Int?
    @Option(name: S.deliveryRoundSize.optionName, help: S.deliveryRoundSize.help) var deliveryRoundSize: Int?
    @Option(name: S.deliveryHeldBackPoll.optionName, help: S.deliveryHeldBackPoll.help) var deliveryHeldBackPoll: Int?
    @Option(name: S.deliveryRecordDelay.optionName, help: S.deliveryRecordDelay.help) var deliveryRecordDelay: Int?
    @Option(name: S.workerID.optionName, help: S.workerID.help) var workerID: String?
    @Option(name: S.leaseTTL.optionName, help: S.leaseTTL.help) var leaseTTL: Int?
    @OptionGroup var log: LogOptions
    @Option(name: S.retentionDays.optionName, help: S.retentionDays.help) var retentionDays: Int?
    @Option(name: S.retentionInterval.optionName, help: S.retentionInterval.help) var retentionInterval: Int?
    @Option(name: S.shutdownTimeout.optionName, help: S.shutdownTimeout.help) var shutdownTimeout: Int?
    @Option(name: S.metricsHost.optionName, help: S.metricsHost.help) var metricsHost: String?
    @Option(name: S.metricsPort.optionName, help: S.metricsPort.help) var metricsPort: Int?

    /// The settings table, by a short name.
    private typealias S = WorkerSettings

    func run() async throws {
        // Before anything uses SwiftNIO's shared event loops (the database, HTTP and operations clients all do).
        NIOSingletons.groupLoopCountSuggestion = try S.eventLoops.value(eventLoops)
        let logger = try log.logger("badgepipe.worker")
        let policyText = S.badgePolicy.value(badgePolicy)
        guard let policy = BadgePolicy(rawValue: policyText) else {
            throw CommandError(
                code: .invalidPolicy, message: "badge policy must be unseen or unread, not \(policyText)")
        }
        let delivery = try deliveryConfiguration()
        var configuration = WorkerConfiguration(
            amqp: try broker.configuration(defaultHeartbeatSeconds: WorkerConfiguration.defaultHeartbeatSeconds),
            databaseURL: S.databaseURL.value(databaseURL),
            delivery: delivery,
            badgePolicy: policy,
            apnsTopic: S.apnsTopic.value(apnsTopic),
            fcmProject: S.fcmProject.optional(fcmProject) ?? delivery.fcmCredentials?.projectID
                ?? WorkerConfiguration.defaultFCMProject,
            topology: broker.topology(partitions: try S.partitions.value(partitions)),
            batchSize: try S.batchSize.value(batchSize))
        configuration.allowUnstableRouting = brokerVersion.allowed
        configuration.sendConcurrency = try S.sendConcurrency.value(sendConcurrency)
        configuration.deliveryRoundSize = try S.deliveryRoundSize.value(deliveryRoundSize)
        configuration.deliveryHeldBackPoll = .milliseconds(try S.deliveryHeldBackPoll.value(deliveryHeldBackPoll))
        configuration.deliveryRecordDelay = .milliseconds(try S.deliveryRecordDelay.value(deliveryRecordDelay))
        configuration.ingestionInterval = .milliseconds(try S.ingestionInterval.value(ingestionInterval))
        configuration.maxDevicesPerUser = try S.maxDevicesPerUser.value(maxDevicesPerUser)
        configuration.maxBytesInFlight = try S.maxMiBInFlight.value(maxMiBInFlight) << 20
        // On PostgreSQL several workers may run: partitions are leased through the database.
        if configuration.databaseURL.lowercased().hasPrefix("postgres") {
            // host-pid-random: a container restarted by its engine keeps its hostname and often its pid, and must
            // still be a new worker, not the heir of its previous life's leases.
            let id =
                S.workerID.optional(workerID)
                ?? "\(ProcessInfo.processInfo.hostName)-\(ProcessInfo.processInfo.processIdentifier)-"
                + String(UInt16.random(in: 0...UInt16.max), radix: 16)
            let ttl = try S.leaseTTL.value(leaseTTL)
            configuration.fleet = WorkerConfiguration.Fleet(workerID: id, leaseTTLMilliseconds: Int64(ttl))
        }
        // Retention: 0 days keeps everything.
        let retentionDays = try S.retentionDays.value(retentionDays)
        let retentionInterval = try S.retentionInterval.value(retentionInterval)
        // The operations listener is off unless a port is given.
        let port = try S.metricsPort.optional(metricsPort)
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
                interval: .seconds(try S.schemaCheckInterval.value(nil)),
                logger: logger))
        if let port {
            let health = worker.health
            services.append(
                OperationsServer(
                    host: S.metricsHost.value(metricsHost), port: port,
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
        let bound = try S.shutdownTimeout.value(shutdownTimeout)
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
        let apnsURL = S.apnsURL.optional(self.apnsURL)
        let sandboxURL = S.apnsSandboxURL.optional(apnsSandboxURL)
        let keyFile = S.apnsKeyFile.optional(apnsKeyFile)
        let keyID = S.apnsKeyID.optional(apnsKeyID)
        let teamID = S.apnsTeamID.optional(apnsTeamID)
        let certFile = S.apnsCertFile.optional(apnsCertFile)
        let certKeyFile = S.apnsCertKeyFile.optional(apnsCertKeyFile)
        let connections = try S.providerConnections.value(providerConnections)
        let timeout = try S.providerTimeout.value(providerTimeout)

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
        if credentials != nil, S.apnsTopic.optional(apnsTopic) == nil {
            throw fail(
                "APNs credentials need --apns-topic (BADGEPIPE_APNS_TOPIC), your app's bundle id: devices registered "
                    + "without a topic are pushed with it, and Apple deactivates a device pushed with another app's")
        }
        var account: ServiceAccount?
        if let file = S.fcmCredentialsFile.optional(fcmCredentialsFile) {
            do {
                account = try ServiceAccount(file: file)
            } catch {
                throw fail("--fcm-credentials-file: \(error)")
            }
        }
        let fcmURL = S.fcmURL.optional(self.fcmURL)
        var providers: Set<PushProvider> = []
        if credentials != nil || apnsURL != nil || sandboxURL != nil { providers.insert(.apns) }
        if account != nil || fcmURL != nil { providers.insert(.fcm) }
        var configuration = DeliveryConfiguration(
            apnsBaseURL: apnsURL ?? DeliveryConfiguration.appleAPNsURL,
            apnsSandboxBaseURL: sandboxURL ?? DeliveryConfiguration.defaultSandboxURL(apnsURL: apnsURL),
            fcmBaseURL: fcmURL ?? DeliveryConfiguration.googleFCMURL,
            apnsCredentials: credentials, fcmCredentials: account, providers: providers,
            trustedRootsFile: S.caFile.optional(caFile), clientsPerProvider: connections,
            requestTimeout: .milliseconds(timeout))
        if let file = S.appsFile.optional(appsFile) {
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
