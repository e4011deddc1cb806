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
    let store: any PipelineStore
    let rounds: DeliveryRounds
    let logger: Logger
    let onReady: (@Sendable () async -> Void)?
    let watchdog: Watchdog?
    var health: WorkerHealth? = nil

    func run() async throws {
        try await configuration.topology.prepare(
            on: connection, allowUnstableRouting: configuration.allowUnstableRouting, logger: logger)
        // Dead tokens reported back, on a channel of their own, for the session's life.
        let publishing = rounds.feedback.map { feedback in
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
        let parkChannel = try await connection.openChannel()
        try await parkChannel.confirmSelect()
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
            connection: connection, configuration: configuration, rounds: rounds,
            ingestion: ingestion, logger: logger, watchdog: watchdog, health: health, parkChannel: parkChannel,
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
                // Ends on shutdown and on the task's cancellation (the service group's, past its shutdown bound or
                // when another service failed): a cancelled wait is rung, the loop sees it here.
                while !shutdown.isSet, !Task.isCancelled {
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
                        await wake.wait(upTo: nil, ringOnCancel: true)
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
                    await wake.wait(upTo: leases.nextRoundDelay(now: .now), ringOnCancel: true)
                }

                try await stopAll(registry, running: &running, leases: &leases, wake: wake)
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

extension WorkerSession {
    /// One lease round in the database (fleet mode), retried while it fails transiently and watched by the
    /// watchdog; then its decisions are carried out (``rebalance(_:round:confirmed:finished:ttl:running:launcher:group:)``).
    func leaseRound(
        _ fleet: WorkerConfiguration.Fleet, leases: inout LeaseStateMachine, running: inout [Int: RunningPartition],
        launcher: PartitionLauncher, group: inout ThrowingTaskGroup<Void, any Error>
    ) async throws {
        let ttl = Duration.milliseconds(fleet.leaseTTLMilliseconds)
        let manager = leases
        WorkerMetrics.leaseRounds.increment()
        let (round, confirmed) = try await watchdog.watch("lease round") {
            try await Retry.transient("lease round", health: health, logger: logger) {
                // Read before the round: the renewed expiries are at least a TTL after this instant.
                let confirmed = ContinuousClock.now
                let request = manager.request(now: confirmed)
                let round = try await store.leaseRound(
                    worker: fleet.workerID, partitions: configuration.topology.partitions,
                    ttlMilliseconds: fleet.leaseTTLMilliseconds, releasing: request.releasing,
                    takeExpired: request.takeExpired)
                return (round, confirmed)
            }
        }
        let finished = ContinuousClock.now
        for action in leases.roundSucceeded(round, confirmed: confirmed, finished: finished) {
            try await rebalance(
                action, round: round, confirmed: confirmed, finished: finished, ttl: ttl, running: &running,
                launcher: launcher, group: &group)
        }
    }
}

extension WorkerSession {
    /// Carries out one decision of a lease round (see ``LeaseStateMachine``): renew a held partition's term, stop a
    /// partition that was lost or is above the fair share, start an acquired one. The round started at `confirmed`
    /// and its answer came at `finished`.
    func rebalance(
        _ action: LeaseStateMachine.Action, round: LeaseRound, confirmed: ContinuousClock.Instant,
        finished: ContinuousClock.Instant, ttl: Duration,
        running: inout [Int: RunningPartition], launcher: PartitionLauncher,
        group: inout ThrowingTaskGroup<Void, any Error>
    ) async throws {
        switch action {
        case .holdOff(let gap, let roundTook):
            logger.warning(
                "lease rounds missed the database for over a TTL; careful takeovers for a while",
                metadata: ["worker.gap": "\(gap)", "worker.round_took": "\(roundTook)"])
        case .renew(let partition):
            // The renewal does not ring the partition's delivery loop: what another worker plans into this
            // partition's outbox (a badge refresh from a worker that lost the partition with a push on its way,
            // pushes held back behind another partition's) comes with a notification on the store's channel
            // (`listenForOutbox`), which rings the partition; a partition claims once as it starts, and every
            // partition is rung when the listener (re)connects. A ring at every renewal was a claim per partition
            // every third of the lease TTL at rest.
            running[partition]?.term?.renewed(confirmed: confirmed)
        case .stop(let partition):
            if !round.leases.contains(where: { $0.partition == partition }) {
                WorkerMetrics.leasesLost.increment()
            }
            // Lost (expired while we were stalled, or taken over), or above the fair share: stop
            // after the batch in progress; the fence stops any commit and the term any send.
            running[partition]?.buffer.finish(nil)
        case .start(let lease, let waitsForEarlierClaims):
            WorkerMetrics.leaseTakeovers.increment()
            running[lease.partition] = try await launcher.start(
                lease.partition,
                term: LeaseTerm(
                    lease: lease, ttl: ttl, confirmed: confirmed,
                    earlierClaimsWaitFrom: waitsForEarlierClaims ? finished : nil),
                in: &group)
            // The partition may be one a worker that died held: dead tokens it recorded may wait unpublished.
            rounds.feedback?.ring()
            logger.info(
                "partition acquired",
                metadata: ["worker.partition": "\(lease.partition)", "worker.epoch": "\(lease.epoch)"])
        }
    }
}

extension WorkerSession {
    /// Forgets the partitions whose stages ended (the lease state machine releases them at its next round).
    func forgetStopped(
        _ registry: PartitionRegistry, running: inout [Int: RunningPartition], leases: inout LeaseStateMachine
    ) {
        for partition in registry.takeStopped() {
            running.removeValue(forKey: partition)
            leases.stopped(partition)
        }
    }

    /// Graceful shutdown, or the connection (or a partition) failed: every partition finishes its batch
    /// in progress, including sending and recording its pushes, then its channel closes. Never cancelled
    /// half-way: a push sent but not recorded would be sent again by whoever drains the outbox next.
    /// Waits until every partition stopped (each rings `wake` when it has), then releases their leases in one
    /// round. Cancelled meanwhile (the service group's shutdown bound ran out), it throws at once.
    func stopAll(
        _ registry: PartitionRegistry, running: inout [Int: RunningPartition], leases: inout LeaseStateMachine,
        wake: Doorbell
    ) async throws {
        _ = leases.stopAll()
        for entry in running.values { entry.buffer.finish(nil) }
        while true {
            // Counted before the registry is read: a partition that stops after it rings past the count.
            let rings = wake.rings
            forgetStopped(registry, running: &running, leases: &leases)
            if running.isEmpty { break }
            await wake.wait(upTo: nil, ringsSeen: rings, ringOnCancel: true)
            try Task.checkCancellation()
        }
        if let fleet = configuration.fleet, !leases.toRelease.isEmpty {
            _ = try? await store.leaseRound(
                worker: fleet.workerID, partitions: configuration.topology.partitions,
                ttlMilliseconds: 0, releasing: leases.toRelease)
        }
    }
}
