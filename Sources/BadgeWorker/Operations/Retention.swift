import BadgeCore
import BadgeStore
import BadgeSupport
import Logging
import Metrics
import ServiceLifecycle

/// Deletes what only grows (``RetentionKind``: processed event ids, read tombstones, read notifications and
/// messages) once it is older than `age`, in batches of `batchSize` rows, each in a short transaction of its own
/// with a pause after it, so that ingestion never waits on it for long. Every `interval`; in a fleet only the worker
/// that holds the `retention` maintenance lease does it (the others try again next time). A `Service`: it stops at
/// graceful shutdown, between two batches.
public struct Retention: Service {
    /// How retention runs.
    public struct Configuration: Sendable {
        /// Rows older than this are deleted.
        public var age: Duration
        /// Between two passes.
        public var interval: Duration
        /// Rows per delete statement.
        public var batchSize: Int
        /// After each batch.
        public var pause: Duration
        /// In a fleet, this worker's id (for the maintenance lease) and the lease's time to live; nil alone.
        public var fleet: (workerID: String, leaseTTLMilliseconds: Int64)?

        /// How long processed event ids and read tombstones are kept by default (`--retention-days`): the window
        /// in which a duplicate of an event has no second effect, and within which `badgepipe dead replay`
        /// replays without `--force`.
        public static let defaultDays = 30
        /// Seconds between two passes by default (`--retention-interval`).
        public static let defaultIntervalSeconds = 600
        /// ``defaultDays`` as a duration.
        public static let defaultAge = age(days: defaultDays)

        /// The age of `days` days (`--retention-days`).
        public static func age(days: Int) -> Duration { .seconds(Int64(days) * 86_400) }

        /// A configuration; ``defaultAge`` by default, checked every ``defaultIntervalSeconds``.
        public init(
            age: Duration = Configuration.defaultAge,
            interval: Duration = .seconds(Configuration.defaultIntervalSeconds), batchSize: Int = 1000,
            pause: Duration = .milliseconds(50), fleet: (workerID: String, leaseTTLMilliseconds: Int64)? = nil
        ) {
            self.age = age
            self.interval = interval
            self.batchSize = batchSize
            self.pause = pause
            self.fleet = fleet
        }
    }

    private let store: any PipelineStore
    private let configuration: Configuration
    private let logger: Logger

    /// Retention over `store`.
    public init(store: any PipelineStore, configuration: Configuration, logger: Logger) {
        self.store = store
        self.configuration = configuration
        self.logger = logger
    }

    public func run() async throws {
        // The first pass once the worker is up (and has migrated the schema), then every interval.
        try? await cancelWhenGracefulShutdown { try await Task.sleep(for: min(configuration.interval, .seconds(30))) }
        while !Task.isShuttingDownGracefully, !Task.isCancelled {
            do {
                // A pass stops at once on graceful shutdown: a statement cancelled half-way rolls back, and the
                // rest waits for the next pass.
                try await cancelWhenGracefulShutdown {
                    if try await holdsLease() { try await pass() }
                }
            } catch is CancellationError {
                return
            } catch {
                logger.warning("retention pass failed; trying again later", metadata: ["worker.error": "\(error)"])
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: configuration.interval) }
        }
    }

    /// Deletes everything older than the age by the database's clock, kind after kind, batch after batch; returns
    /// the rows deleted per kind.
    @discardableResult
    public func pass() async throws -> [RetentionKind: Int] {
        var deleted: [RetentionKind: Int] = [:]
        for kind in RetentionKind.allCases {
            while !Task.isShuttingDownGracefully {
                let count = try await Retry.transient("retention \(kind.rawValue)", logger: logger) {
                    [store, batchSize = configuration.batchSize, age = configuration.age] in
                    try await store.purge(kind, olderThan: age, limit: batchSize)
                }
                deleted[kind, default: 0] += count
                Counter(label: "badgepipe_retention_deleted_total", dimensions: [("kind", kind.rawValue)])
                    .increment(by: count)
                if count < configuration.batchSize { break }
                // A long pass keeps its lease, or leaves the rest to whoever holds it now.
                guard try await holdsLease() else { return deleted }
                try await Task.sleep(for: configuration.pause)
            }
        }
        if deleted.values.contains(where: { $0 > 0 }) {
            logger.info(
                "retention deleted old rows",
                metadata: Logger.Metadata(
                    uniqueKeysWithValues: deleted.map { ("retention.\($0.key.rawValue)", "\($0.value)") }))
        }
        return deleted
    }

    private func holdsLease() async throws -> Bool {
        guard let fleet = configuration.fleet else { return true }
        return try await store.maintenanceLease(
            "retention", worker: fleet.workerID, ttlMilliseconds: max(fleet.leaseTTLMilliseconds, 60_000))
    }
}
