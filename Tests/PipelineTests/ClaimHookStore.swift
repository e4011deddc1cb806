import BadgeCore
import BadgeStore
import Synchronization

/// A store that runs a hook right after its first successful push claim (to make something happen between a
/// worker's claim and its send) and counts claims; everything else goes to `base` unchanged.
final class ClaimHookStore: PipelineStore {
    private let base: any PipelineStore
    private let afterFirstClaim: @Sendable () async throws -> Void
    private let claimCount = Mutex(0)

    init(base: any PipelineStore, afterFirstClaim: @escaping @Sendable () async throws -> Void) {
        self.base = base
        self.afterFirstClaim = afterFirstClaim
    }

    /// Successful claims so far.
    var claims: Int { claimCount.withLock { $0 } }

    func claimPushes(
        partition: Int?, limit: Int, policy: BadgePolicy, lease: PartitionLease?,
        skipClaimedBefore: Int64?, recording: DeliveryRecord
    ) async throws -> ClaimedPushes {
        let claimed = try await base.claimPushes(
            partition: partition, limit: limit, policy: policy, lease: lease,
            skipClaimedBefore: skipClaimedBefore, recording: recording)
        guard !claimed.pushes.isEmpty else { return claimed }
        let first = claimCount.withLock { count in
            count += 1
            return count == 1
        }
        if first { try await afterFirstClaim() }
        return claimed
    }

    func recordDeliveries(_ record: DeliveryRecord) async throws { try await base.recordDeliveries(record) }
    func listenForOutbox(
        listening: @escaping @Sendable () -> Void, partition: @escaping @Sendable (Int) -> Void
    ) async {
        await base.listenForOutbox(listening: listening, partition: partition)
    }
    func outboxAhead(partition: Int) async throws -> OutboxAhead {
        try await base.outboxAhead(partition: partition)
    }
    func takeFeedback(limit: Int, hold: Duration) async throws -> [StoredTokenFeedback] {
        try await base.takeFeedback(limit: limit, hold: hold)
    }
    func feedbackAhead() async throws -> Duration? { try await base.feedbackAhead() }
    func deleteFeedback(_ ids: [Int64]) async throws { try await base.deleteFeedback(ids) }
    func run() async { await base.run() }
    func migrate() async throws { try await base.migrate() }
    func checkSchema() async throws { try await base.checkSchema() }
    func apply(_ batches: [ApplyBatch], policy: BadgePolicy) async throws -> [[AppliedEvent]] {
        try await base.apply(batches, policy: policy)
    }
    func leaseRound(
        worker: String, partitions: Int, ttlMilliseconds: Int64, releasing: Set<Int>, takeExpired: Bool
    ) async throws -> LeaseRound {
        try await base.leaseRound(
            worker: worker, partitions: partitions, ttlMilliseconds: ttlMilliseconds, releasing: releasing,
            takeExpired: takeExpired)
    }
    func renewLease(_ lease: PartitionLease, ttlMilliseconds: Int64) async throws -> Bool {
        try await base.renewLease(lease, ttlMilliseconds: ttlMilliseconds)
    }
    func refreshBadge(after push: PlannedPush, partition: Int?, policy: BadgePolicy) async throws -> Bool {
        try await base.refreshBadge(after: push, partition: partition, policy: policy)
    }
    func outboxBacklog(partitions: [Int]) async throws -> [OutboxBacklog] {
        try await base.outboxBacklog(partitions: partitions)
    }
    func purge(_ kind: RetentionKind, olderThan age: Duration, limit: Int) async throws -> Int {
        try await base.purge(kind, olderThan: age, limit: limit)
    }
    func maintenanceLease(_ name: String, worker: String, ttlMilliseconds: Int64) async throws -> Bool {
        try await base.maintenanceLease(name, worker: worker, ttlMilliseconds: ttlMilliseconds)
    }
    func close() async throws { try await base.close() }
}
