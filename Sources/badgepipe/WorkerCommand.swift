import AMQPClient
import ArgumentParser
import BadgeCore
import BadgeDelivery
import BadgeStore
import BadgeWorker
import Foundation
import Logging
import ServiceLifecycle

/// `badgepipe worker`.
struct WorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "worker", abstract: "Consume events, update counts, send badge-bearing pushes (until SIGTERM).")

    @Option(help: "Broker URL (BADGEPIPE_AMQP_URL).") var amqpURL: String?
    @Option(help: "postgres://… or sqlite:PATH (BADGEPIPE_DATABASE_URL, default sqlite:badgepipe.sqlite).")
    var databaseURL: String?
    @Option(help: "APNs base URL (BADGEPIPE_APNS_URL, default the local sink).") var apnsURL: String?
    @Option(help: "FCM base URL (BADGEPIPE_FCM_URL, default the local sink).") var fcmURL: String?
    @Option(help: "unseen or unread (BADGEPIPE_BADGE_POLICY).") var badgePolicy: String?
    @Option(help: "Default APNs topic (BADGEPIPE_APNS_TOPIC).") var apnsTopic: String?
    @Option(help: "FCM project (BADGEPIPE_FCM_PROJECT, default badgepipe).") var fcmProject: String?
    @Option(help: "Partition queues (BADGEPIPE_PARTITIONS, default 8).") var partitions: Int?
    @Option(help: "Prefix of every broker name (BADGEPIPE_NAMESPACE, default badgepipe; tests use their own).")
    var namespace: String?
    @Option(help: "Events per database transaction (BADGEPIPE_BATCH_SIZE, default 128).") var batchSize: Int?
    @Option(help: "Fleet worker id (BADGEPIPE_WORKER_ID, default host-pid-random).") var workerID: String?
    @Option(help: "Partition lease TTL in ms, the failover time (BADGEPIPE_LEASE_TTL_MS, default 5000).")
    var leaseTTL: Int?
    @Option(help: "trace, debug, info, warning, error (BADGEPIPE_LOG_LEVEL).") var logLevel: String?

    func run() async throws {
        let logger = Settings.logger("badgepipe.worker", level: logLevel)
        let policyText = Settings.value(badgePolicy, "BADGEPIPE_BADGE_POLICY", default: "unseen")
        guard let policy = BadgePolicy(rawValue: policyText) else {
            throw CommandError(
                code: "invalid_policy", message: "badge policy must be unseen or unread, not \(policyText)")
        }
        let sink = "http://127.0.0.1:8787"
        var configuration = WorkerConfiguration(
            amqp: try AMQPConfiguration(url: Settings.amqpURL(amqpURL)),
            databaseURL: Settings.value(databaseURL, "BADGEPIPE_DATABASE_URL", default: "sqlite:badgepipe.sqlite"),
            delivery: DeliveryConfiguration(
                apnsBaseURL: Settings.value(apnsURL, "BADGEPIPE_APNS_URL", default: sink),
                fcmBaseURL: Settings.value(fcmURL, "BADGEPIPE_FCM_URL", default: sink)),
            badgePolicy: policy,
            apnsTopic: Settings.value(apnsTopic, "BADGEPIPE_APNS_TOPIC", default: "com.example.app"),
            fcmProject: Settings.value(fcmProject, "BADGEPIPE_FCM_PROJECT", default: "badgepipe"),
            topology: Topology(
                namespace: Settings.value(namespace, "BADGEPIPE_NAMESPACE", default: "badgepipe"),
                partitions: partitions ?? Int(Settings.value(nil, "BADGEPIPE_PARTITIONS", default: "8")) ?? 8),
            batchSize: batchSize ?? Int(Settings.value(nil, "BADGEPIPE_BATCH_SIZE", default: "128")) ?? 128)
        // On PostgreSQL several workers may run: partitions are leased through the database.
        if configuration.databaseURL.hasPrefix("postgres") {
            // host-pid-random: a container restarted by its engine keeps its hostname and often its pid, and must
            // still be a new worker, not the heir of its previous life's leases.
            let id = Settings.value(
                workerID, "BADGEPIPE_WORKER_ID",
                default: "\(ProcessInfo.processInfo.hostName)-\(ProcessInfo.processInfo.processIdentifier)-"
                    + String(UInt16.random(in: 0...UInt16.max), radix: 16))
            let ttl = leaseTTL ?? Int(Settings.value(nil, "BADGEPIPE_LEASE_TTL_MS", default: "5000")) ?? 5000
            configuration.fleet = WorkerConfiguration.Fleet(workerID: id, leaseTTLMilliseconds: Int64(ttl))
        }
        let store = try BadgeStoreFactory.make(url: configuration.databaseURL, logger: logger)
        let worker = Worker(configuration: configuration, store: store, logger: logger, exitWhenStuckFor: .seconds(30))
        // The store closes after the worker stopped: services shut down in reverse order.
        let services: [any Service] = [StoreService(store: store), worker]
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: services.map { ServiceGroupConfiguration.ServiceConfiguration(service: $0) },
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger))
        try await group.run()
    }
}
