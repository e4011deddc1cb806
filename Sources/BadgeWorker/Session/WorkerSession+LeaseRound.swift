import BadgeStore

extension WorkerSession {
    /// One lease round in the database (fleet mode), retried while it fails transiently and watched by the
    /// watchdog; then its decisions are carried out (``rebalance(_:round:confirmed:ttl:running:launcher:group:)``).
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
        for action in leases.roundSucceeded(round, confirmed: confirmed, finished: .now) {
            try await rebalance(
                action, round: round, confirmed: confirmed, ttl: ttl, running: &running, launcher: launcher,
                group: &group)
        }
    }
}
