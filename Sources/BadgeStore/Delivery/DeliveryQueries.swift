import BadgeCore
import BadgeSupport

/// The delivery stage's queries, written once for both backends: claiming many pushes (``claimDue(partition:limit:policy:lease:skipClaimedBefore:recording:database:)``,
/// in `DeliveryQueries+Claim.swift`), recording many outcomes, looking ahead in a partition's outbox. Each costs a
/// constant number of statements however many pushes it covers.
///
/// Times (`next_attempt_at`, `created_at`) are microseconds since the epoch by the database's clock
/// (``FleetQueries/statementNow(_:)``): workers hand in durations (a retry's delay) and read ages, never their own
/// clock's time, so a worker whose clock is off schedules and claims exactly as the others do.
enum DeliveryQueries {
    /// What waits in `partition`'s outbox (see ``OutboxAhead``): one statement for the earliest retry (one descent
    /// of `outbox_partition_retry`) and whether a row never attempted is there (the first such row of `outbox_partition_fresh`); when there is one, a second for the other partitions that
    /// hold the first row of such rows' tokens (at most ``lookAheadTokens`` tokens, one descent of `outbox_token_id`
    /// each), which on PostgreSQL also notifies them on `channel`.
    static func ahead(
        partition: Int, channel: String?, database: any SQLTransactor
    ) async throws -> OutboxAhead {
        var binds = SQLBinds()
        let placeholder = binds.add(.int(Int64(partition)))
        let rows = try await database.read(
            "SELECT " + aheadItems(partition: placeholder, left: nil, dialect: database.dialect), binds.values)
        guard let row = rows.first else { throw StoreError.corrupt("the look-ahead returned no row") }
        let first = try decodeAhead(row)
        guard first.heldBack else { return first }
        let retryIn = first.retryIn
        let holders = """
            SELECT DISTINCT h.partition_id FROM (SELECT (SELECT e.partition_id FROM outbox e WHERE e.token = f.token
                ORDER BY e.id LIMIT 1) AS partition_id FROM (SELECT DISTINCT f.token FROM outbox f
                WHERE f.partition_id = \(placeholder) AND f.attempts = 0 AND f.token IS NOT NULL
                ORDER BY f.token LIMIT \(lookAheadTokens)) f) h
            WHERE h.partition_id <> \(placeholder)
            """
        let held: [SQLRow]
        if let channel, database.dialect == .postgres {
            let name = binds.add(.text(channel))
            held = try await database.statement(
                "SELECT w.partition_id, pg_notify(\(name), CAST(w.partition_id AS text)) AS notified "
                    + "FROM (\(holders)) w",
                binds.values)
        } else {
            held = try await database.read(holders, binds.values)
        }
        let heldBy = try held.compactMap { try $0["partition_id"].int64.map(Int.init) }
        return OutboxAhead(retryIn: retryIn, heldBack: true, heldBy: heldBy.sorted())
    }

    /// The `SELECT` items of a look-ahead of partition `placeholder` (see ``OutboxAhead``), `retry_in` and `held`,
    /// over the outbox rows (alias `a`) for which `left` holds (all when nil): a claim's own statement leaves out
    /// the rows it takes and removes.
    static func aheadItems(partition placeholder: String, left: String?, dialect: SQLDialect) -> String {
        let now = FleetQueries.statementNow(dialect)
        let extra = left.map { " AND " + $0 } ?? ""
        return "(SELECT min(a.next_attempt_at) FROM outbox a WHERE a.partition_id = \(placeholder) "
            + "AND a.attempts > 0\(extra)) - \(now) AS retry_in, "
            + "(SELECT count(*) FROM (SELECT 1 FROM outbox a WHERE a.partition_id = \(placeholder) "
            + "AND a.attempts = 0\(extra) LIMIT 1) AS one) AS held"
    }

    /// The look-ahead of a row with ``aheadItems(partition:left:dialect:)``, without ``OutboxAhead/heldBy``.
    static func decodeAhead(_ row: SQLRow) throws -> OutboxAhead {
        OutboxAhead(
            retryIn: try row["retry_in"].int64.map { Duration.microseconds(max(0, $0)) },
            heldBack: try (row["held"].int64 ?? 0) > 0)
    }

    /// The most tokens of a partition's pushes held back whose holders a look-ahead looks for
    /// (``ahead(partition:channel:database:)``).
    static let lookAheadTokens = 64

    /// Records what a delivery round did: a plain record (see `DeliveryRecord.isPlain`, the usual case) in one
    /// statement on its own on PostgreSQL, any other in one transaction.
    static func record(_ record: DeliveryRecord, database: any SQLTransactor) async throws {
        guard !record.isEmpty else { return }
        guard record.isPlain, database.dialect == .postgres else {
            try await database.transaction { sql in try await write(record, sql: sql) }
            return
        }
        var binds = SQLBinds()
        let parts = plainRecordParts(record, binds: &binds).parts
        _ = try await database.statement("WITH \(parts.joined(separator: ", ")) SELECT 1", binds.values)
    }

    /// The parts (`WITH` queries) of a plain record on PostgreSQL (see `DeliveryRecord.isPlain`): `removed`, the
    /// ids of the rows it removes, `gone`, their deletion, and `raised`, the devices' versions moved up
    /// (``raisePushedVersions(_:binds:dialect:)``); `removed` is the name of the table of removed ids, nil when
    /// there are none. A claim carries them before its own parts (and leaves the removed rows out).
    static func plainRecordParts(
        _ record: DeliveryRecord, binds: inout SQLBinds
    ) -> (parts: [String], removed: String?) {
        var parts: [String] = []
        let removed = record.removed
        if !removed.isEmpty {
            var set = SQLRowSet([("id", .int)])
            for id in removed.sorted() { set.append([.int(id)]) }
            parts.append(
                "removed AS MATERIALIZED (SELECT id FROM \(set.table("s", binds: &binds, dialect: .postgres)))")
            parts.append(
                "gone AS (DELETE FROM outbox WHERE \(SQLDialect.postgres.among("id", "SELECT id FROM removed")))")
        }
        if let raise = raisePushedVersions(record, binds: &binds, dialect: .postgres) {
            parts.append("raised AS (\(raise))")
        }
        return (parts, removed.isEmpty ? nil : "removed")
    }

    /// Writes `record` inside the caller's transaction.
    static func write(_ record: DeliveryRecord, sql: any SQLExecutor) async throws {
        guard !record.isEmpty else { return }
        try await deleteOutboxRows(record.removed, sql: sql)
        var binds = SQLBinds()
        if let raise = raisePushedVersions(record, binds: &binds, dialect: sql.dialect) {
            try await sql.execute(raise, binds.values)
        }
        if !record.retries.isEmpty {
            // Due after its delay by the database's clock, counted from this statement.
            var set = SQLRowSet([("id", .int), ("delay", .int)])
            for retry in record.retries.sorted(by: { $0.id < $1.id }) {
                set.append([.int(retry.id), .int(max(0, retry.delay.wholeMicroseconds))])
            }
            var binds = SQLBinds()
            let statement =
                "UPDATE outbox SET next_attempt_at = \(FleetQueries.statementNow(sql.dialect)) + s.delay, "
                + "attempts = outbox.attempts + 1 FROM \(set.table("s", binds: &binds, dialect: sql.dialect)) "
                + "WHERE outbox.id = s.id"
            try await sql.execute(statement, binds.values)
        }
        if !record.deadTokens.isEmpty {
            var set = SQLRowSet([("token", .text)])
            for token in record.deadTokens.sorted() { set.append([.text(token)]) }
            var binds = SQLBinds()
            let source = set.table("s", binds: &binds, dialect: sql.dialect)
            let tokens = sql.dialect.among("token", "SELECT token FROM \(source)")
            try await sql.execute("UPDATE devices SET active = FALSE WHERE \(tokens)", binds.values)
            try await sql.execute("DELETE FROM outbox WHERE \(tokens)", binds.values)
        }
        try await FeedbackQueries.insert(record.feedback, sql: sql)
    }

    /// The statement that moves each device's `pushed_version` up to the highest version of `record`'s accepted
    /// pushes to it (``DeliveryRecord/pushed``), only while the token belongs to that push's user and only up;
    /// nil when there are none. The rows are locked in token order first, as every writer of several devices rows
    /// locks them (no deadlock with ingestion or another partition's record).
    static func raisePushedVersions(
        _ record: DeliveryRecord, binds: inout SQLBinds, dialect: SQLDialect
    ) -> String? {
        let pushed = record.highestPushed
        guard !pushed.isEmpty else { return nil }
        var set = SQLRowSet([("token", .text), ("user_id", .text), ("pushed_version", .int)])
        for entry in pushed { set.append([.text(entry.token), .text(entry.user), .int(entry.version)]) }
        let tokens = set.table("t", binds: &binds, dialect: dialect)
        let values = set.table("s", binds: &binds, dialect: dialect)
        return """
            UPDATE devices SET pushed_version = s.pushed_version FROM \(values)
            WHERE devices.token IN (SELECT l.token FROM devices l
                    WHERE \(dialect.among("l.token", "SELECT token FROM \(tokens)")) ORDER BY l.token\(dialect.forNoKeyUpdate))
                AND devices.token = s.token AND devices.user_id = s.user_id AND devices.pushed_version < s.pushed_version
            """
    }

    /// Deletes outbox rows (sent, dropped or failed pushes), in one statement.
    static func deleteOutboxRows(_ ids: [Int64], sql: any SQLExecutor) async throws {
        guard !ids.isEmpty else { return }
        let delete = deleteStatement(ids, dialect: sql.dialect)
        try await sql.execute(delete.sql, delete.binds)
    }

    /// The statement that deletes outbox rows `ids`.
    static func deleteStatement(_ ids: [Int64], dialect: SQLDialect) -> (sql: String, binds: [SQLValue]) {
        var set = SQLRowSet([("id", .int)])
        for id in ids.sorted() { set.append([.int(id)]) }
        var binds = SQLBinds()
        let source = set.table("s", binds: &binds, dialect: dialect)
        return ("DELETE FROM outbox WHERE \(dialect.among("id", "SELECT id FROM \(source)"))", binds.values)
    }
}

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
