import BadgeCore
import BadgeStore
import BadgeSupport
import Logging
import ServiceLifecycle

/// Samples the outbox of the partitions this worker holds every `interval` into the gauges
/// `badgepipe_outbox_depth` and `badgepipe_outbox_oldest_age_seconds` (one statement per sample, whatever the
/// number of partitions). A `Service` of its own, beside the worker: a slow database delays the figures, never a
/// lease round. Partitions the worker gave up read 0. On PostgreSQL a sample that counts a backlog far larger than
/// the outbox's planner statistics record also has them taken again (`ANALYZE`; see the store's
/// `keepOutboxStatistics`), so the worker runs it whether or not it serves metrics.
public struct OutboxGauges: Service {
    private let store: any PipelineStore
    private let health: WorkerHealth
    private let interval: Duration
    private let logger: Logger

    /// Samples `store` for the partitions `health` reports held.
    public init(store: any PipelineStore, health: WorkerHealth, interval: Duration = .seconds(5), logger: Logger) {
        self.store = store
        self.health = health
        self.interval = interval
        self.logger = logger
    }

    public func run() async throws {
        var reported: Set<Int> = []
        while !Task.isShuttingDownGracefully, !Task.isCancelled {
            let held = health.partitionsHeld
            for partition in reported.subtracting(held) {
                WorkerMetrics.outboxDepth(partition: partition).record(0)
                WorkerMetrics.outboxOldestAge(partition: partition).record(0)
            }
            reported = held
            if !held.isEmpty {
                do {
                    let backlogs = try await cancelWhenGracefulShutdown { [store] in
                        try await store.outboxBacklog(partitions: Array(held))
                    }
                    for backlog in backlogs {
                        WorkerMetrics.outboxDepth(partition: backlog.partition).record(backlog.depth)
                        // By the database's clock, as every time the outbox holds.
                        let age = backlog.oldestAge.map { Double($0.wholeMicroseconds) / 1_000_000 } ?? 0
                        WorkerMetrics.outboxOldestAge(partition: backlog.partition).record(age)
                    }
                } catch {
                    logger.debug("outbox sample failed", metadata: ["worker.error": "\(error)"])
                }
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
        }
    }
}
