import AMQPClient
import BadgeCore
import BadgeStore
import Logging

/// Starts consuming one partition queue for a worker session: its channel and consumer, and its two stages
/// (ingestion, ``PartitionIngestion``; delivery, ``PartitionDelivery``) as tasks of the session's task group.
/// Whichever stage ends first ends the other; then the partition's channel closes and the session's manager loop
/// hears of it through the ``PartitionRegistry`` and its wake-up ``Doorbell``.
struct PartitionLauncher {
    let connection: AMQPConnection
    let configuration: WorkerConfiguration
    let rounds: DeliveryRounds
    /// The session's ingestion transactions, shared by its partitions.
    let ingestion: TransactionGroup<ApplyBatch, [AppliedEvent]>
    let logger: Logger
    let watchdog: Watchdog?
    let health: WorkerHealth?
    /// The session's channel for parking invalid messages (publisher confirms on).
    let parkChannel: AMQPChannel
    let registry: PartitionRegistry
    /// Wakes the manager loop early: a partition stopped (to be released), or shutdown.
    let wake: Doorbell

    /// Starts `partition` (under `term` in a fleet) with its tasks in `group`.
    func start(
        _ partition: Int, term: LeaseTerm?, in group: inout ThrowingTaskGroup<Void, any Error>
    ) async throws -> RunningPartition {
        let lease = term?.lease
        let channel = try await connection.openChannel()
        let prefetch = PrefetchBudget(
            maxBytes: configuration.maxBytesInFlight / configuration.topology.partitions,
            maxMessages: Int(configuration.prefetch))
        try await channel.qos(prefetchCount: UInt16(prefetch.current))
        let buffer = MessageBuffer()
        // The connection's thread appends each message to the buffer itself: no task wakes up per burst of
        // messages, and the partition wakes up only when it waits for its first message of a batch.
        try await channel.consume(
            queue: configuration.topology.queueName(partition),
            handler: AMQPMessageHandler(
                message: { buffer.append($0) }, end: { buffer.finish($0) }, maxBodyBytes: EventDecoder.maxBodyBytes))
        let doorbell = Doorbell()
        let partitionLogger = logger.with(metadataKey: "worker.partition", value: "\(partition)")
        let ingestionStage = PartitionIngestion(
            channel: channel, parkChannel: parkChannel, buffer: buffer, ingestion: ingestion, doorbell: doorbell,
            configuration: configuration,
            context: ApplyContext(
                partition: partition, lease: lease,
                maxDevicesPerUser: configuration.maxDevicesPerUser,
                readStateChunk: configuration.maxTransactionWeight),
            watchdog: watchdog, health: health, prefetch: prefetch, logger: partitionLogger)
        let delivery = PartitionDelivery(
            rounds: rounds, partition: partition, term: term, doorbell: doorbell,
            heldBackPoll: configuration.deliveryHeldBackPoll, recordDelay: configuration.deliveryRecordDelay,
            wakePartitions: { [registry] in registry.ring($0) })
        registry.started(partition, doorbell: doorbell)
        group.addTask { [logger, registry, wake] in
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
                        try await ingestionStage.run()
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
        return RunningPartition(term: term, buffer: buffer, doorbell: doorbell)
    }
}
