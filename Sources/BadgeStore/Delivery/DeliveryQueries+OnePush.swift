import BadgeCore

extension DeliveryQueries {
    /// The push guard for one outbox row, run just before it is sent: returns the push to send, or nil to drop
    /// it. First records `sent` (outbox rows of pushes sent since the previous call) as sent, in the same
    /// transaction; then, with `lease`, fails with `lease_lost` unless the lease is still held. A row that is gone
    /// was sent by somebody else (the partition's new owner, while this worker was frozen): nil. Otherwise the
    /// decision is ``PushGuard``'s, written by ``DeliveryQueries/claim(_:policy:lease:sql:)`` (the delivery stage
    /// claims many rows at once the same way).
    static func claimPush(
        _ outbox: OutboxPush, policy: BadgePolicy, recordingSent sent: [Int64], lease: PartitionLease?,
        database: any SQLTransactor
    ) async throws -> PlannedPush? {
        try await database.transaction { sql in
            try await deleteOutboxRows(sent, sql: sql)
            if let lease { try await FleetQueries.checkLease(lease, sql: sql) }
            let read = try await sql.query(
                "SELECT \(OutboxRow.selectColumns) FROM outbox WHERE id = $1" + sql.dialect.forUpdate,
                [.int(outbox.id)])
            var events = try await OutboxEvents.read(for: read, sql: sql)
            let (rows, unreadable) = try OutboxRow.decodeAll(read, events: &events)
            // A row that cannot be read (changed since it was read as `outbox`) is moved aside, and nothing is sent.
            _ = try await refuse(unreadable, events: events, sql: sql)
            return try await DeliveryQueries.claim(rows, policy: policy, lease: lease, sql: sql).first?.push
        }
    }

    /// `push` with its user's current counts, badge and preferences at a fresh `badge_version` (the user's version
    /// is bumped); nil for an unknown user.
    private static func atFreshVersion(
        _ push: PlannedPush, policy: BadgePolicy, sql: any SQLExecutor
    ) async throws
        -> PlannedPush?
    {
        let bumped = try await sql.query(
            "UPDATE users SET badge_version = badge_version + 1 WHERE user_id = $1 "
                + "RETURNING \(EventRules.UserRow.columns)",
            [.text(push.recipient)])
        guard let row = bumped.first else { return nil }
        return try EventRules.UserRow(row: row).current(push, policy: policy)
    }

    /// Plans a badge refresh for the device of `push` (see ``BadgeStore/refreshBadge(after:partition:policy:)``).
    static func refreshBadge(
        after push: PlannedPush, partition: Int?, policy: BadgePolicy, database: any SQLTransactor
    ) async throws -> Bool {
        try await database.transaction { sql in
            let device = try await sql.query(
                "SELECT 1 FROM devices WHERE token = $1 AND user_id = $2 AND active",
                [.text(push.token), .text(push.recipient)])
            if device.isEmpty { return false }
            var badgeOnly = push
            badgeOnly.kind = .badgeOnly
            guard let refresh = try await atFreshVersion(badgeOnly, policy: policy, sql: sql) else { return false }
            let values = OutboxRow.values(of: refresh, partition: partition)
            try await sql.execute(
                "INSERT INTO outbox (\(OutboxRow.insertColumns)) VALUES ("
                    + (1...values.count).map { "$\($0)" }.joined(separator: ", ")
                    + ", \(FleetQueries.statementNow(sql.dialect)))",
                values)
            return true
        }
    }
}
