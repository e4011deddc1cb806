import AMQPClient
import BadgeCore
import BadgeDelivery
import BadgeStore
import BadgeSupport
import BadgeWire
import Logging
import ServiceLifecycle

/// `badgepipe worker`: declares the topology, consumes every partition queue, applies events to the store in
/// batches (one transaction and one multiple-ack per batch), and sends the resulting pushes in `badge_version`
/// order per user.
///
/// Guarantees it keeps: nothing is acked before its effect is committed; invalid messages are parked in
/// `badgepipe.dead` (confirmed) before they are acked; transient database failures are retried in place (never
/// requeued, which would reorder); pushes go through the store's outbox, so a crash between commit and send
/// re-sends them at the next start instead of losing them. On graceful shutdown the batch in progress finishes,
/// then the channels are closed without `basic.cancel`, so whatever was not processed returns to its queue in order.
public struct Worker: Service {
    private let configuration: WorkerConfiguration
    private let store: any PipelineStore
    private let logger: Logger
    /// Called once the topology is declared and every partition is being consumed.
    private let onReady: (@Sendable () async -> Void)?
    /// Ends the process when work stops making progress (see `Watchdog`); nil in tests that run in-process.
    private let watchdog: Watchdog?
    /// What `/healthz` and `/readyz` report.
    public let health: WorkerHealth

    public init(
        configuration: WorkerConfiguration,
        store: any PipelineStore,
        logger: Logger,
        exitWhenStuckFor stuckLimit: Duration? = nil,
        health: WorkerHealth = WorkerHealth(),
        onReady: (@Sendable () async -> Void)? = nil
    ) {
        self.configuration = configuration
        self.store = store
        self.logger = logger
        self.onReady = onReady
        self.watchdog = stuckLimit.map { Watchdog(limit: $0, logger: logger) }
        self.health = health
        health.watch(watchdog)
    }

    public func run() async throws {
        watchdog?.start()
        let missing = PushProvider.allCases.filter { !configuration.delivery.providers.contains($0) }
        let refused =
            missing.isEmpty
            ? ""
            : "; pushes to \(missing.map(\.displayName).joined(separator: " and ")) devices are refused "
                + "(provider_not_configured) and their devices kept"
        logger.info(
            "push providers: \(configuration.delivery.providersDescription)\(refused)",
            metadata: [
                "worker.providers": "\(PushProvider.allCases.filter { !missing.contains($0) }.map(\.rawValue))",
                "worker.apps": "\(configuration.delivery.apps.map(\.name))",
                "worker.default_app": "\(configuration.delivery.registry.defaultApp ?? "none")",
            ])
        // Every partition sends concurrently: over HTTP/1.1 (a local sink) allow as many connections as pushes in
        // flight.
        let http = try ProviderClients(
            configuration: configuration.delivery,
            http1ConnectionsPerHost: max(8, configuration.sendConcurrency * configuration.topology.partitions / 4))
        let sender = PushSender(
            configuration: configuration.delivery, clients: http, health: health.providers, logger: logger)
        let rounds = DeliveryRounds(
            store: store, sender: sender,
            builder: PushPayloadBuilder(
                defaultAPNsTopic: configuration.apnsTopic, fcmProject: configuration.fcmProject),
            concurrency: configuration.sendConcurrency, policy: configuration.badgePolicy,
            backoff: Backoff(
                initial: configuration.delivery.initialBackoff, maximum: configuration.delivery.maxBackoff),
            maxAge: configuration.delivery.maxPushAge, roundSize: configuration.deliveryRoundSize, health: health,
            feedback: FeedbackPublisher(
                store: store, exchange: configuration.topology.feedbackExchange,
                hold: configuration.feedbackHold, logger: logger),
            recordGathering: configuration.recordGathering, logger: logger)
        do {
            // At start the database may not answer yet (a fleet starting with it): wait, saying so.
            // Waiting for the database or the broker (a fleet starting with them) ends at once on SIGTERM:
            // nothing is held yet, nothing can be lost.
            do {
                try await cancelWhenGracefulShutdown {
                    // No attempt timeout: a migration may build indexes over large tables.
                    try await Retry.transient(
                        "migrate", waitingFor: "the database", health: health, attemptTimeout: nil, logger: logger
                    ) {
                        try await store.migrate()
                    }
                }
            } catch is CancellationError where Task.isShuttingDownGracefully {
                try await http.shutdown()
                return
            } catch let error as StoreError where error.code == .schemaTooNew {
                // Retrying cannot help: this worker is older than the database's schema.
                logger.critical("the database schema is newer than this worker", metadata: ["worker.error": "\(error)"])
                throw error
            }
            // Pushes a previous run committed but did not get to send (in a fleet, each partition's are sent by
            // whoever leases the partition next).
            if configuration.fleet == nil { try await rounds.drainOutbox(partition: nil) }
            var sessions = 0
            // A fleet spreads its connections over a cluster's nodes: each worker starts at a random one, and after
            // a session ends moves to the next (the node it used may be the one that was lost).
            let nodes = AMQPNodeRotation(
                configuration.amqp, startingAt: Int.random(in: 0..<configuration.amqp.nodes.count))
            while !Task.isCancelled, !Task.isShuttingDownGracefully {
                let connection: AMQPConnection
                do {
                    connection = try await cancelWhenGracefulShutdown { [logger] in
                        try await nodes.connect(retry: AMQPRetryPolicy(), logger: logger)
                    }
                } catch is CancellationError where Task.isShuttingDownGracefully {
                    break
                }
                health.connected(true)
                if sessions > 0 { WorkerMetrics.amqpReconnects.increment() }
                sessions += 1
                let outcome = await runSession(connection: connection, rounds: rounds)
                health.connected(false)
                health.held([])
                await connection.close()
                if case .failure(let error as TopologyError) = outcome {
                    // Retrying cannot help: the settings or the broker must change.
                    logger.critical(
                        "the broker's topology disagrees with this worker", metadata: ["worker.error": "\(error)"])
                    throw error
                }
                if case .failure(let error) = outcome, !Task.isCancelled {
                    logger.warning("worker session ended, reconnecting", metadata: ["worker.error": "\(error)"])
                    try await Task.sleep(for: .milliseconds(200))
                } else {
                    break
                }
            }
        } catch {
            try? await http.shutdown()
            throw error
        }
        if Task.isCancelled {
            // Past the shutdown bound (or told twice): the work in progress was abandoned, losing nothing.
            logger.warning(
                "stopped before the batch or delivery round in progress finished: unacked events return to the queue, unrecorded pushes are sent again"
            )
        }
        try await http.shutdown()
    }

    /// One connection's life: declare, consume, process until shutdown or connection loss.
    private func runSession(connection: AMQPConnection, rounds: DeliveryRounds) async -> Result<Void, any Error> {
        do {
            let health = self.health
            let onReady = self.onReady
            let session = WorkerSession(
                connection: connection, configuration: configuration, store: store, rounds: rounds,
                logger: logger,
                onReady: {
                    health.started()
                    await onReady?()
                }, watchdog: watchdog, health: health)
            try await session.run()
            return .success(())
        } catch {
            return .failure(error)
        }
    }
}

extension Logger {
    /// A copy with one more metadata value.
    func with(metadataKey key: String, value: Logger.MetadataValue) -> Logger {
        var copy = self
        copy[metadataKey: key] = value
        return copy
    }
}
