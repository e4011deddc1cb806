import BadgeStore

extension WorkerSession {
    /// Carries out one decision of a lease round (see ``LeaseStateMachine``): renew a held partition's term, stop a
    /// partition that was lost or is above the fair share, start an acquired one.
    func rebalance(
        _ action: LeaseStateMachine.Action, round: LeaseRound, confirmed: ContinuousClock.Instant, ttl: Duration,
        running: inout [Int: RunningPartition], launcher: PartitionLauncher,
        group: inout ThrowingTaskGroup<Void, any Error>
    ) async throws {
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
            running[lease.partition] = try await launcher.start(
                lease.partition,
                term: LeaseTerm(
                    lease: lease, ttl: ttl, confirmed: confirmed,
                    waitsForEarlierClaims: waitsForEarlierClaims),
                in: &group)
            logger.info(
                "partition acquired",
                metadata: ["worker.partition": "\(lease.partition)", "worker.epoch": "\(lease.epoch)"])
        }
    }
}
