import BadgeCore

extension DeliveryQueries {
    /// `push` with its user's current counts, badge and preferences at a fresh `badge_version` (the user's version
    /// is bumped); nil for an unknown user.
    private static func atFreshVersion(
        _ push: PlannedPush, policy: BadgePolicy, sql: any SQLExecutor
    ) async throws
        -> PlannedPush?
    {
        var binds = SQLBinds()
        let bumped = try await sql.query(
            "UPDATE users SET badge_version = badge_version + 1 WHERE user_id = \(binds.add(.text(push.recipient))) "
                + "RETURNING \(EventRules.UserRow.columns)",
            binds.values)
        guard let row = bumped.first else { return nil }
        return try EventRules.UserRow(row: row).current(push, policy: policy)
    }

    /// Plans a badge refresh for the device of `push` (see ``PipelineStore/refreshBadge(after:partition:policy:)``).
    /// The partition's delivery loop is another worker's by then: on PostgreSQL the transaction notifies it on
    /// `channel` (see ``PipelineStore/listenForOutbox(listening:partition:)``).
    static func refreshBadge(
        after push: PlannedPush, partition: Int?, policy: BadgePolicy, channel: String?,
        database: any SQLTransactor
    ) async throws -> Bool {
        try await database.transaction { sql in
            var deviceBinds = SQLBinds()
            let device = try await sql.query(
                "SELECT 1 FROM devices WHERE token = \(deviceBinds.add(.text(push.token))) "
                    + "AND user_id = \(deviceBinds.add(.text(push.recipient))) AND active",
                deviceBinds.values)
            if device.isEmpty { return false }
            var badgeOnly = push
            badgeOnly.kind = .badgeOnly
            guard let refresh = try await atFreshVersion(badgeOnly, policy: policy, sql: sql) else { return false }
            var binds = SQLBinds()
            let row = binds.add(OutboxRow.values(of: refresh, partition: partition))
            try await sql.execute(
                "INSERT INTO outbox (\(OutboxRow.insertColumns)) VALUES (\(row), \(FleetQueries.statementNow(sql.dialect)))",
                binds.values)
            if let channel, let partition, sql.dialect == .postgres {
                var notify = SQLBinds()
                _ = try await sql.query(
                    "SELECT pg_notify(\(notify.add(.text(channel))), \(notify.add(.text(String(partition)))))",
                    notify.values)
            }
            return true
        }
    }
}
