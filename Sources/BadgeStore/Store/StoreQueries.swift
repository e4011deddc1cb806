import BadgeCore
import BadgeWire

/// The store's operations other than ``EventRules``, written once against ``SQLTransactor``.
enum StoreQueries {
    /// The active devices of `user`, in token order. With `lock`, PostgreSQL share-locks the rows until the
    /// transaction ends, so a concurrent move of one of the tokens to another user waits for it (and its
    /// outbox rows precede the new owner's).
    static func activeDevices(
        of user: String, sql: any SQLExecutor, lock: Bool = false
    ) async throws
        -> [RegisteredDevice]
    {
        let rows = try await sql.query(
            "SELECT token, provider, topic, environment, app FROM devices WHERE user_id = $1 AND active"
                + (lock ? sql.dialect.forKeyShare : ""),
            [.text(user)])
        return try rows.map(RegisteredDevice.init(row:))
            // Same order as InboxModel (Swift string order), independent of the database's collation.
            .sorted { $0.token < $1.token }
    }

    static func apply(
        _ events: [Event], policy: BadgePolicy, context: ApplyContext, database: any SQLTransactor,
        beforeEvent: (@Sendable (Int, any SQLExecutor) async throws -> Void)?
    ) async throws -> [AppliedEvent] {
        try await apply(
            [ApplyBatch(events: events, context: context)], policy: policy, database: database,
            beforeEvent: beforeEvent
        ).first ?? []
    }

    /// Applies `batches` in one transaction: their events concatenated in order, each tagged with its batch's
    /// partition, under all of their leases (see ``BadgeStore/apply(_:policy:)``).
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
            rules.claimsPushes = batches.allSatisfy(\.context.claimsPushes)
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

    static func pendingPushes(
        limit: Int, partition: Int?, database: any SQLTransactor
    ) async throws -> [OutboxPush] {
        guard limit > 0 else { return [] }
        return try await database.transaction { sql in
            let rows: [SQLRow]
            if let partition {
                rows = try await sql.query(
                    "SELECT \(OutboxRow.selectColumns) FROM outbox WHERE partition_id = $1 ORDER BY id LIMIT $2",
                    [.int(Int64(partition)), .int(Int64(limit))])
            } else {
                rows = try await sql.query(
                    "SELECT \(OutboxRow.selectColumns) FROM outbox ORDER BY id LIMIT $1", [.int(Int64(limit))])
            }
            var events = try await OutboxEvents.read(for: rows, sql: sql)
            return try rows.map { try OutboxRow.decodeListed($0, events: &events) }
        }
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
        return Set(partitions).sorted().map {
            found[$0] ?? OutboxBacklog(partition: $0, depth: 0, oldestCreatedAt: nil)
        }
    }

    static func markSent(_ ids: [Int64], database: any SQLTransactor) async throws {
        guard !ids.isEmpty else { return }
        try await database.transaction { sql in try await DeliveryQueries.deleteOutboxRows(ids, sql: sql) }
    }

    static func deactivateDevice(token: String, database: any SQLTransactor) async throws {
        try await database.transaction { sql in
            try await sql.execute("UPDATE devices SET active = FALSE WHERE token = $1", [.text(token)])
            try await sql.execute("DELETE FROM outbox WHERE token = $1", [.text(token)])
        }
    }

    static func snapshot(user: String, database: any SQLTransactor) async throws -> UserSnapshot {
        try await database.transaction { sql in
            let row = try await sql.query(
                "SELECT \(EventRules.UserRow.columns) FROM users WHERE user_id = $1", [.text(user)]
            ).first
            let state = try row.map { try EventRules.UserRow(row: $0) } ?? EventRules.UserRow()
            return UserSnapshot(
                user: user, counts: state.counts, badgeVersion: state.badgeVersion, badgeEnabled: state.badgeEnabled,
                previews: state.previews, readAllUntil: state.readAllUntil.map(Timestamp.init(microsecondsSinceEpoch:)),
                openedUntil: state.openedUntil.map(Timestamp.init(microsecondsSinceEpoch:)),
                devices: try await activeDevices(of: user, sql: sql))
        }
    }
}
