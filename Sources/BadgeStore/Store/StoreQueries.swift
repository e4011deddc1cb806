import BadgeCore
import BadgeWire

/// The store's operations other than ``EventRules``, written once against ``SQLTransactor``.
enum StoreQueries {
    /// Applies `batches` in one transaction: their events concatenated in order, each tagged with its batch's
    /// partition, under all of their leases (see ``PipelineStore/apply(_:policy:)``).
    static func apply(
        _ batches: [ApplyBatch], policy: BadgePolicy, database: any SQLTransactor,
        beforeEvent: (@Sendable (Int, any SQLExecutor) async throws -> Void)?
    ) async throws -> [[AppliedEvent]] {
        let events = batches.flatMap(\.events)
        guard !events.isEmpty, let first = batches.first?.context else { return batches.map { _ in [] } }
        let leases = batches.compactMap(\.context.lease)
        let applied = try await database.transaction { sql in
            // PostgreSQL folds the lease check into the batch's first statement (a round trip less per batch).
            let folded = sql.dialect == .postgres
            if !folded {
                for lease in leases.sorted(by: { $0.partition < $1.partition }) {
                    try await FleetQueries.checkLease(lease, sql: sql)
                }
            }
            var rules = EventRules(
                sql: sql, policy: policy, partition: first.partition, maxDevicesPerUser: first.maxDevicesPerUser,
                beforeEvent: beforeEvent, leases: folded ? leases : [])
            rules.readStateChunk = first.readStateChunk
            rules.chunked = batches.count == 1 && first.chunked && batches[0].events.count == 1
            if rules.chunked { rules.resumeAfter = first.resumeAfter ?? .start }
            if batches.count > 1 {
                rules.eventPartitions = batches.flatMap { batch in
                    repeatElement(batch.context.partition, count: batch.events.count)
                }
            }
            return try await rules.apply(events)
        }
        var results: [[AppliedEvent]] = []
        var start = 0
        for batch in batches {
            results.append(Array(applied[start..<start + batch.events.count]))
            start += batch.events.count
        }
        return results
    }

    /// Rows and the oldest `created_at` per partition, with its age by the database's clock, for `partitions`
    /// (empty ones included, with depth 0).
    static func outboxBacklog(partitions: [Int], database: any SQLTransactor) async throws -> [OutboxBacklog] {
        guard !partitions.isEmpty else { return [] }
        // Partition numbers are integers: written into the statement, not bound.
        let list = Set(partitions).sorted().map(String.init).joined(separator: ",")
        let rows = try await database.transaction { sql in
            try await sql.query(
                """
                SELECT partition_id, count(*) AS depth, min(created_at) AS oldest_created_at,
                    \(FleetQueries.statementNow(sql.dialect)) - min(created_at) AS oldest_age FROM outbox
                WHERE partition_id IN (\(list))
                GROUP BY partition_id
                """, [])
        }
        var found: [Int: OutboxBacklog] = [:]
        for row in rows {
            guard let partition = try row["partition_id"].int64, let depth = try row["depth"].int64 else {
                throw StoreError.corrupt("outbox backlog row \(row.values)")
            }
            found[Int(partition)] = OutboxBacklog(
                partition: Int(partition), depth: Int(depth), oldestCreatedAt: try row["oldest_created_at"].int64,
                oldestAge: try row["oldest_age"].int64.map { .microseconds(max(0, $0)) })
        }
        if database.dialect == .postgres {
            // The sample stands whatever becomes of this: on failure the statistics are left to autovacuum.
            try? await keepOutboxStatistics(depth: found.values.reduce(0) { $0 + $1.depth }, database: database)
        }
        return Set(partitions).sorted().map {
            found[$0] ?? OutboxBacklog(partition: $0, depth: 0, oldestCreatedAt: nil)
        }
    }

    /// Fewest rows the outbox holds (in the partitions one sample counts) before its statistics are looked at.
    static let outboxAnalyzeDepth = 1_000

    /// Whether the outbox's planner statistics (`reltuples`, nil when PostgreSQL has none) say far fewer rows than a
    /// sample counted: at least ``outboxAnalyzeDepth``, and more than 4 times what the statistics say.
    static func outboxStatisticsAreBehind(depth: Int, reltuples: Double?) -> Bool {
        guard depth >= outboxAnalyzeDepth, let reltuples, reltuples >= 0 else { return false }
        return Double(depth) > 4 * reltuples
    }

    /// Runs `ANALYZE` on the outbox when its statistics are behind a backlog (``outboxStatisticsAreBehind``).
    ///
    /// Why: the outbox is a queue. When it has drained, autovacuum finds it (nearly) empty and records so, and every
    /// plan made afterwards (the connections cache generic plans, see `PostgresStatementCache`) takes it for a
    /// table of one row, and picks among its indexes by accident: rows looked up by `id` through a whole-index scan
    /// of `outbox (token, id)`, a token's rows read from `outbox_pkey` from one id to the end. Harmless while it is
    /// small; once a backlog forms, every claim scans whole indexes, the backlog grows faster, and claims run into
    /// the statement timeout retry after retry until autovacuum comes round, up to a minute later. `ANALYZE`
    /// records the backlog, which invalidates the plans, and they are made again on it. Several workers may see it
    /// at once: the one that takes the advisory lock ``outboxAnalyzeLockKey`` (for its transaction, without
    /// waiting) does it, and the others go on (`SKIP_LOCKED` instead would have PostgreSQL warn in its log each
    /// time).
    static func keepOutboxStatistics(depth: Int, database: any SQLTransactor) async throws {
        guard depth >= outboxAnalyzeDepth else { return }
        let rows = try await database.transaction { sql in
            try await sql.query(
                "SELECT reltuples::float8::text AS reltuples FROM pg_class WHERE oid = to_regclass('outbox')", [])
        }
        let reltuples = try rows.first?["reltuples"].string.flatMap(Double.init)
        guard outboxStatisticsAreBehind(depth: depth, reltuples: reltuples) else { return }
        try await database.transaction { sql in
            let lock = try await sql.query(
                "SELECT pg_try_advisory_xact_lock(\(outboxAnalyzeLockKey)) AS taken", []
            ).first
            guard try lock?["taken"].bool == true else { return }
            try await sql.execute("ANALYZE outbox")
        }
    }

    /// The key of the PostgreSQL advisory lock a worker holds while it analyzes the outbox ("BPoutbox").
    static let outboxAnalyzeLockKey: Int64 = 0x4250_6f75_7462_6f78
}
