import AMQPClient
import BadgeStore
import Logging
import ServiceLifecycle

/// One connection's life in a worker: declare the topology, then consume the partitions this worker should hold
/// until shutdown or until the connection is lost.
///
/// Single node: every partition, from start to end. Fleet: a manager loop runs lease rounds in the database
/// every third of the lease TTL; it starts consuming partitions it acquired (after sending what their outbox
/// still holds), gives up partitions above its fair share (after their batch in progress, by closing their
/// channel: never `basic.cancel`), and stops at once on a partition whose lease it lost. Single active consumer
/// on every partition queue stays as the broker-side guarantee that one consumer at a time gets a partition.
struct WorkerSession {
    let connection: AMQPConnection
    let configuration: WorkerConfiguration
    let store: any BadgeStore
    let dispatcher: PushDispatcher
    let logger: Logger
    let onReady: (@Sendable () async -> Void)?
    let watchdog: Watchdog?
    var health: WorkerHealth? = nil

    func run() async throws {
        try await configuration.topology.prepare(
            on: connection, allowUnstableRouting: configuration.allowUnstableRouting, logger: logger)
        // Dead tokens reported back, on a channel of their own, for the session's life.
        let publishing = dispatcher.feedback.map { feedback in
            Task { [connection] in await feedback.run(on: connection) }
        }
        do {
            try await consume()
        } catch {
            publishing?.cancel()
            await publishing?.value
            throw error
        }
        publishing?.cancel()
        await publishing?.value
    }

    /// Consumes the partitions this worker should hold until shutdown or until the connection is lost.
    private func consume() async throws {
        let deadLetters = try await connection.openChannel()
        try await deadLetters.confirmSelect()
        let registry = PartitionRegistry()
        // Wake-ups of this worker's delivery loops sent by other workers through the database.
        let listening = Task { [store] in
            await store.listenForOutbox(listening: { registry.ringAll() }, partition: { registry.ring([$0]) })
        }
        defer { listening.cancel() }
        let shutdown = ShutdownFlag()
        // Wakes the manager loop early: a partition stopped (to be released), or shutdown.
        let wake = Doorbell()
        let ingestion = TransactionGroup<ApplyBatch, [AppliedEvent]>.ingestion(
            store: store, policy: configuration.badgePolicy, maxWeight: configuration.maxTransactionWeight,
            interval: configuration.ingestionInterval, health: health, logger: logger)
        let launcher = PartitionLauncher(
            connection: connection, configuration: configuration, dispatcher: dispatcher,
            ingestion: ingestion, logger: logger, watchdog: watchdog, health: health, deadLetters: deadLetters,
            registry: registry,
            wake: wake)

        try await withGracefulShutdownHandler {
            try await withThrowingTaskGroup(of: Void.self) { group in
                var running: [Int: RunningPartition] = [:]
                // Which partitions to hold (fleet mode; see `LeaseStateMachine`).
                var leases = LeaseStateMachine(
                    ttl: .milliseconds(
                        configuration.fleet?.leaseTTLMilliseconds
                            ?? WorkerConfiguration.Fleet.defaultLeaseTTLMilliseconds))
                var ready = false

                var failure: (any Error)?
                while !shutdown.isSet {
                    if let error = registry.failure {
                        failure = error
                        break
                    }
                    if connection.isClosed {
                        failure = await connection.closed() ?? AMQPError(.connectionLost, "connection closed")
                        break
                    }
                    forgetStopped(registry, running: &running, leases: &leases)
                    health?.held(Set(running.keys))
                    guard let fleet = configuration.fleet else {
                        if running.isEmpty, !ready {
                            for partition in 0..<configuration.topology.partitions {
                                running[partition] = try await launcher.start(partition, term: nil, in: &group)
                            }
                        }
                        if !ready {
                            ready = true
                            health?.held(Set(running.keys))
                            logReady(held: configuration.topology.partitions)
                            await onReady?()
                        }
                        // Woken by a partition that stopped or failed (a lost connection ends every consumer) and by
                        // shutdown: nothing else to look at.
                        await wake.wait(upTo: nil)
                        continue
                    }
                    try await leaseRound(
                        fleet, leases: &leases, running: &running, launcher: launcher, group: &group)
                    health?.held(Set(running.keys))
                    if !ready {
                        ready = true
                        logReady(held: running.count)
                        await onReady?()
                    }
                    await wake.wait(upTo: leases.nextRoundDelay(now: .now))
                }

                try await stopAll(registry, running: &running, leases: &leases)
                await connection.close()
                try await group.waitForAll()
                if let failure { throw failure }
            }
        } onGracefulShutdown: {
            shutdown.set()
            wake.ring()
        }
    }

    private func logReady(held: Int) {
        logger.info(
            "worker ready",
            metadata: [
                "worker.partitions": "\(configuration.topology.partitions)", "worker.held": "\(held)",
                "worker.policy": "\(configuration.badgePolicy.rawValue)",
                "worker.id": "\(configuration.fleet?.workerID ?? "single")",
                "amqp.heartbeat_seconds": "\(connection.heartbeatSeconds)",
            ])
    }
}
