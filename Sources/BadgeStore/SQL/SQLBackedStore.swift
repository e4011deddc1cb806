import BadgeCore

/// A store whose operations are the shared SQL rules (``EventRules``, ``StoreQueries``, ``FleetQueries``,
/// ``DeliveryQueries``) run on the transactors of its ``sqlBackend``: both built-in stores. Only `run()`,
/// `migrate()` and `close()` differ between backends; everything else is written once, here.
public protocol SQLBackedStore: PipelineStore {
    /// Where the shared rules run.
    var sqlBackend: SQLBackend { get }
}

extension SQLBackedStore {
    public func checkSchema() async throws {
        try await Schema.checkCompatibility(sqlBackend.database)
    }

    public func apply(_ batches: [ApplyBatch], policy: BadgePolicy) async throws -> [[AppliedEvent]] {
        try await StoreQueries.apply(
            batches, policy: policy, database: sqlBackend.database, beforeEvent: sqlBackend.hooks.beforeEvent)
    }

    public func purge(_ kind: RetentionKind, olderThan age: Duration, limit: Int) async throws -> Int {
        try await RetentionQueries.purge(kind, olderThan: age, limit: limit, database: sqlBackend.database)
    }

    public func maintenanceLease(_ name: String, worker: String, ttlMilliseconds: Int64) async throws -> Bool {
        try await RetentionQueries.maintenanceLease(
            name, worker: worker, ttlMilliseconds: ttlMilliseconds, database: sqlBackend.leases)
    }

    public func outboxBacklog(partitions: [Int]) async throws -> [OutboxBacklog] {
        try await StoreQueries.outboxBacklog(partitions: partitions, database: sqlBackend.database)
    }

    public func leaseRound(
        worker: String, partitions: Int, ttlMilliseconds: Int64, releasing: Set<Int>, takeExpired: Bool
    ) async throws -> LeaseRound {
        try await FleetQueries.round(
            worker: worker, partitions: partitions, ttlMilliseconds: ttlMilliseconds, releasing: releasing,
            takeExpired: takeExpired, database: sqlBackend.leases)
    }

    public func renewLease(_ lease: PartitionLease, ttlMilliseconds: Int64) async throws -> Bool {
        try await FleetQueries.renew(lease, ttlMilliseconds: ttlMilliseconds, database: sqlBackend.leases)
    }

    public func claimPushes(
        partition: Int?, limit: Int, policy: BadgePolicy, lease: PartitionLease?,
        skipClaimedBefore: Int64?, recording: DeliveryRecord
    ) async throws -> ClaimedPushes {
        try await DeliveryQueries.claimDue(
            partition: partition, limit: limit, policy: policy, lease: lease,
            skipClaimedBefore: skipClaimedBefore, recording: recording, database: sqlBackend.database)
    }

    public func outboxAhead(partition: Int) async throws -> OutboxAhead {
        try await DeliveryQueries.ahead(
            partition: partition, channel: sqlBackend.outboxChannel, database: sqlBackend.database)
    }

    public func recordDeliveries(_ record: DeliveryRecord) async throws {
        try await DeliveryQueries.record(record, database: sqlBackend.database)
    }

    public func takeFeedback(limit: Int, hold: Duration) async throws -> [StoredTokenFeedback] {
        try await FeedbackQueries.take(limit: limit, hold: hold, database: sqlBackend.database)
    }

    public func feedbackAhead() async throws -> Duration? {
        try await FeedbackQueries.ahead(database: sqlBackend.database)
    }

    public func deleteFeedback(_ ids: [Int64]) async throws {
        try await FeedbackQueries.delete(ids, database: sqlBackend.database)
    }

    public func refreshBadge(after push: PlannedPush, partition: Int?, policy: BadgePolicy) async throws -> Bool {
        try await DeliveryQueries.refreshBadge(
            after: push, partition: partition, policy: policy, channel: sqlBackend.outboxChannel,
            database: sqlBackend.database)
    }
}
