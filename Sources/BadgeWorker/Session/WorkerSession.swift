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

    /// A partition being consumed.
    private struct Running {
        var term: LeaseTerm?
        var buffer: MessageBuffer
        var doorbell: Doorbell
    }

    func run() async throws {
        let control = try await connection.openChannel()
        try await configuration.topology.declare(on: control)
        try await configuration.topology.checkNoExtraPartition(on: connection)
        let deadLetters = try await connection.openChannel()
        try await deadLetters.confirmSelect()
        let registry = PartitionRegistry()
        let shutdown = ShutdownFlag()
        // Wakes the manager loop early: a partition stopped (to be released), or shutdown.
        let wake = Doorbell()

        try await withGracefulShutdownHandler {
            try await withThrowingTaskGroup(of: Void.self) { group in
                var running: [Int: Running] = [:]
                // Which partitions to hold (fleet mode; see `LeaseManager`).
                var leases = LeaseManager(
                    ttl: .milliseconds(configuration.fleet?.leaseTTLMilliseconds ?? 5000))
                var ready = false

                func start(_ partition: Int, term: LeaseTerm?) async throws {
                    let lease = term?.lease
                    let channel = try await connection.openChannel()
                    try await channel.qos(prefetchCount: configuration.prefetch)
                    let consumer = try await channel.consume(queue: configuration.topology.queueName(partition))
                    let buffer = MessageBuffer()
                    let doorbell = Doorbell()
                    running[partition] = Running(term: term, buffer: buffer, doorbell: doorbell)
                    let partitionLogger = logger.with(metadataKey: "worker.partition", value: "\(partition)")
                    let processor = PartitionProcessor(
                        channel: channel, deadLetters: deadLetters, buffer: buffer, store: store, doorbell: doorbell,
                        configuration: configuration,
                        context: ApplyContext(
                            partition: partition, lease: lease,
                            maxDevicesPerUser: configuration.maxDevicesPerUser),
                        watchdog: watchdog, health: health, logger: partitionLogger)
                    let delivery = PartitionDelivery(
                        dispatcher: dispatcher, partition: partition, term: term, doorbell: doorbell,
                        idlePoll: configuration.deliveryIdlePoll)
                    group.addTask {
                        do {
                            for try await message in consumer { buffer.append(message) }
                            buffer.finish(nil)
                        } catch {
                            buffer.finish(error)
                        }
                    }
                    group.addTask {
                        // The two stages side by side; whichever ends first ends the other (ingestion after its
                        // batch in progress, delivery after its round in progress).
                        let failure = await withTaskGroup(of: (any Error)?.self) { stages in
                            stages.addTask {
                                do {
                                    try await delivery.run()
                                    return nil
                                } catch {
                                    buffer.finish(nil)
                                    return error
                                }
                            }
                            stages.addTask {
                                do {
                                    try await processor.run()
                                    doorbell.close()
                                    return nil
                                } catch {
                                    doorbell.close()
                                    return error
                                }
                            }
                            var first: (any Error)?
                            for await error in stages where first == nil { first = error }
                            return first
                        }
                        if let error = failure as? StoreError, error.code == .leaseLost {
                            logger.warning(
                                "lease lost, leaving the partition",
                                metadata: ["worker.partition": "\(partition)", "worker.error": "\(error.message)"])
                        } else if let failure {
                            registry.fail(failure)
                        }
                        // Unprocessed messages go back to the queue in order (no basic.cancel).
                        try? await channel.close()
                        registry.stopped(partition)
                        // Release it at once: the manager loop runs its next lease round now.
                        wake.ring()
                    }
                }

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
                    for partition in registry.takeStopped() {
                        running.removeValue(forKey: partition)
                        leases.stopped(partition)
                    }
                    health?.held(Set(running.keys))
                    guard let fleet = configuration.fleet else {
                        if running.isEmpty, !ready {
                            for partition in 0..<configuration.topology.partitions {
                                try await start(partition, term: nil)
                            }
                        }
                        if !ready {
                            ready = true
                            health?.held(Set(running.keys))
                            logReady(held: configuration.topology.partitions)
                            await onReady?()
                        }
                        try? await shutdown.wait(upTo: .milliseconds(250))
                        continue
                    }
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
                    for action in leases.roundSucceeded(round, confirmed: confirmed, finished: .now) {
                        switch action {
                        case .holdOff(let gap, let roundTook):
                            logger.warning(
                                "lease rounds missed the database for over a TTL; careful takeovers for a while",
                                metadata: ["worker.gap": "\(gap)", "worker.round_took": "\(roundTook)"])
                        case .renew(let partition):
                            running[partition]?.term?.renewed(confirmed: confirmed)
                            // Send what others planned into this partition's outbox meanwhile (a badge refresh from
                            // a worker that lost the partition with a push on its way), even when no events come.
                            running[partition]?.doorbell.ring()
                        case .stop(let partition):
                            if !round.leases.contains(where: { $0.partition == partition }) {
                                WorkerMetrics.leasesLost.increment()
                            }
                            // Lost (expired while we were stalled, or taken over), or above the fair share: stop
                            // after the batch in progress; the fence stops any commit and the term any send.
                            running[partition]?.buffer.finish(nil)
                        case .start(let lease, let waitsForEarlierClaims):
                            WorkerMetrics.leaseTakeovers.increment()
                            try await start(
                                lease.partition,
                                term: LeaseTerm(
                                    lease: lease, ttl: ttl, confirmed: confirmed,
                                    waitsForEarlierClaims: waitsForEarlierClaims))
                            logger.info(
                                "partition acquired",
                                metadata: ["worker.partition": "\(lease.partition)", "worker.epoch": "\(lease.epoch)"])
                        }
                    }
                    health?.held(Set(running.keys))
                    if !ready {
                        ready = true
                        logReady(held: running.count)
                        await onReady?()
                    }
                    await wake.wait(upTo: leases.nextRoundDelay(now: .now))
                }

                // Graceful shutdown, or the connection (or a partition) failed: every partition finishes its batch
                // in progress, including sending and recording its pushes, then its channel closes. Never cancelled
                // half-way: a push sent but not recorded would be sent again by whoever drains the outbox next.
                _ = leases.stopAll()
                for entry in running.values { entry.buffer.finish(nil) }
                while !running.isEmpty {
                    for partition in registry.takeStopped() {
                        running.removeValue(forKey: partition)
                        leases.stopped(partition)
                    }
                    if !running.isEmpty { try await Task.sleep(for: .milliseconds(20)) }
                }
                if let fleet = configuration.fleet, !leases.toRelease.isEmpty {
                    _ = try? await store.leaseRound(
                        worker: fleet.workerID, partitions: configuration.topology.partitions,
                        ttlMilliseconds: 0, releasing: leases.toRelease)
                }
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
            ])
    }
}
