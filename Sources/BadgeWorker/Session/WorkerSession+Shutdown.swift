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
    /// Waits (polling the registry) until every partition stopped, then releases their leases in one round.
    func stopAll(
        _ registry: PartitionRegistry, running: inout [Int: RunningPartition], leases: inout LeaseStateMachine
    ) async throws {
        _ = leases.stopAll()
        for entry in running.values { entry.buffer.finish(nil) }
        while !running.isEmpty {
            forgetStopped(registry, running: &running, leases: &leases)
            if !running.isEmpty { try await Task.sleep(for: .milliseconds(20)) }
        }
        if let fleet = configuration.fleet, !leases.toRelease.isEmpty {
            _ = try? await store.leaseRound(
                worker: fleet.workerID, partitions: configuration.topology.partitions,
                ttlMilliseconds: 0, releasing: leases.toRelease)
        }
    }
}
