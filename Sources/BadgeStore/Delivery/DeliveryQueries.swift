import BadgeCore
import BadgeSupport

/// The delivery stage's queries, written once for both backends: claiming many pushes (``claimDue(partition:limit:policy:lease:skipClaimedBefore:recording:database:)``,
/// below), recording many outcomes, looking ahead in a partition's outbox. Each costs a
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

/// The delivery claim: the one way a push leaves the outbox for a provider, on both databases.
///
/// A claim is one statement on PostgreSQL (a transaction of the same statements on SQLite, where a transaction
/// costs no round trip): the previous round's plain record (its sent, dropped and failed rows removed, each
/// device's `pushed_version` moved up to what reached it), the lease check, the due rows marked with the lease's
/// epoch, and what the push guard needs: each claimed row's device as it stands and each alert's event once. Then
/// ``PushGuard``, the one badge-version guard, decides in memory what to send, rebuild or drop. Its drops are
/// removed with the round's record; a rebuild (rare: a push older than what its device already got) bumps its
/// user's version and rewrites the row in a transaction of its own before it goes; rows the code cannot read
/// (rare) are moved to `refused_pushes` the same way.
///
/// `pushed_version` moves only with a record, to the versions that went out: the claim itself writes nothing to
/// `devices`. The guard of a claim compares with the device's stored version raised by the record that claim
/// carries (on PostgreSQL the statement reads the devices as they were before its own record's update).
extension DeliveryQueries {
    /// Claims up to `limit` due pushes of `partition` (all partitions when nil), oldest first: rows whose next
    /// attempt is due by the database's clock and that no earlier row of the same token waits ahead of (a
    /// device's pushes go out in order). Each claimed push comes with its age (``OutboxPush/age``). With
    /// `skipClaimedBefore`, rows claimed under an earlier lease epoch are left alone (see `LeaseTerm.isInDoubt`).
    /// `recording` (the previous round's outcomes) is written first: a plain one as part of the claim, any other
    /// in a transaction before it. Due rows that cannot be read are moved to `refused_pushes`
    /// (``refuse(_:events:sql:)``) and returned in ``ClaimedPushes/refused``; rows the guard drops come back in
    /// ``ClaimedPushes/dropped``, for the round's record to remove.
    static func claimDue(
        partition: Int?, limit: Int, policy: BadgePolicy, lease: PartitionLease?,
        skipClaimedBefore: Int64?, recording: DeliveryRecord = DeliveryRecord(), database: any SQLTransactor
    ) async throws -> ClaimedPushes {
        var recording = recording
        if !recording.isPlain || limit <= 0 {
            // Retries, dead tokens, feedback: rare, a transaction of their own.
            try await record(recording, database: database)
            recording = DeliveryRecord()
            guard limit > 0 else { return .none }
        }
        let claim = ClaimStatements(
            partition: partition, limit: limit, lease: lease, skipClaimedBefore: skipClaimedBefore,
            recording: recording)
        var read =
            database.dialect == .postgres
            ? try await claim.runAsOneStatement(database) : try await claim.runInTransaction(database)
        // What the record this claim carries moved up, which the statement's own read of `devices` predates.
        for pushed in recording.highestPushed {
            guard var device = read.devices[pushed.token], device.user == pushed.user else { continue }
            device.pushedVersion = max(device.pushedVersion, pushed.version)
            read.devices[pushed.token] = device
        }
        // In id order: the statement returns its rows in no particular order.
        let ordered = try read.rows.sorted { try ($0["id"].int64 ?? 0) < ($1["id"].int64 ?? 0) }
        let (pushes, unreadable) = try OutboxRow.decodeAll(ordered, events: &read.events)
        var refused: [RefusedPush] = []
        if !unreadable.isEmpty {
            refused = try await database.transaction { [events = read.events] sql in
                try await refuse(unreadable, events: events, sql: sql)
            }
        }
        var guardState = PushGuard(devices: read.devices)
        let decisions = guardState.decide(pushes.map(\.push))
        var rebuilt: [Int64: PlannedPush] = [:]
        let toRebuild = zip(pushes, decisions).filter { $0.1 == .rebuild }.map(\.0)
        if !toRebuild.isEmpty {
            rebuilt = try await database.transaction { sql in try await rebuild(toRebuild, policy: policy, sql: sql) }
        }
        var claimed: [ClaimedPush] = []
        var dropped: [Int64] = []
        for (row, decision) in zip(pushes, decisions) {
            switch decision {
            case .send: claimed.append(ClaimedPush(outbox: row, push: row.push))
            case .drop: dropped.append(row.id)
            case .rebuild:
                // An unknown user (no users row) has nothing to rebuild from: the alert cannot be sent.
                guard let push = rebuilt[row.id] else {
                    dropped.append(row.id)
                    continue
                }
                claimed.append(ClaimedPush(outbox: row, push: push))
            }
        }
        let reachedLimit = try read.rows.count >= limit || reachedDeviceLimit(read.rows)
        return ClaimedPushes(
            pushes: claimed, reachedLimit: reachedLimit, refused: refused, dropped: dropped, ahead: read.ahead)
    }

    /// What a claim read: the claimed rows (in no particular order), their devices, their alerts' events, and what
    /// the partition holds beyond them.
    private struct ClaimRead {
        var rows: [SQLRow]
        var devices: [String: PushGuard.Device]
        var events: OutboxEvents
        var ahead: OutboxAhead?
    }

    /// The statements of one claim (see ``claimDue(partition:limit:policy:lease:skipClaimedBefore:recording:database:)``).
    private struct ClaimStatements {
        let partition: Int?
        let limit: Int
        let lease: PartitionLease?
        let skipClaimedBefore: Int64?
        let recording: DeliveryRecord

        /// The due rows marked with the lease's epoch (selected, without a lease), with `item` added.
        private func claimed(due: String, binds: inout SQLBinds, dialect: SQLDialect) -> String {
            guard let lease else {
                return "SELECT \(OutboxRow.claimedColumns(dialect)) FROM outbox WHERE \(dialect.among("id", due))"
            }
            let leaseHeld = dialect == .postgres ? " AND EXISTS (SELECT 1 FROM lease)" : ""
            return "UPDATE outbox SET claimed_epoch = \(binds.add(.int(lease.epoch))) "
                + "WHERE \(dialect.among("id", due))\(leaseHeld) RETURNING \(OutboxRow.claimedColumns(dialect))"
        }

        /// PostgreSQL: the record, the lease check, the claim and the read of the claimed rows' devices and events
        /// as one statement (no `BEGIN`, no `COMMIT`). Each part reads the one before: the claim runs only while the
        /// lease is held and leaves out the rows the record removes. The record's parts run even when the lease is
        /// gone: what they record went out. Throws `lease_lost` when the lease was not held.
        func runAsOneStatement(_ database: any SQLTransactor) async throws -> ClaimRead {
            var binds = SQLBinds()
            var (parts, removed) = DeliveryQueries.plainRecordParts(recording, binds: &binds)
            if let lease { parts.append(FleetQueries.leaseQuery(lease, binds: &binds)) }
            let due = DeliveryQueries.dueIDs(
                partition: partition, limit: limit, skipClaimedBefore: skipClaimedBefore, binds: &binds,
                dialect: .postgres, excluding: removed)
            parts.append("c AS (\(claimed(due: due, binds: &binds, dialect: .postgres)))")
            parts.append(
                "d AS MATERIALIZED (SELECT token AS d_token, user_id AS d_user_id, pushed_version AS d_pushed_version "
                    + "FROM devices WHERE \(SQLDialect.postgres.among("token", "SELECT token FROM c")))")
            let held = lease == nil ? "1" : "(SELECT count(*) FROM lease)"
            var ahead = ""
            if let partition {
                let left = removed.map { " AND a.id NOT IN (SELECT id FROM \($0))" } ?? ""
                ahead =
                    DeliveryQueries.aheadItems(
                        partition: binds.add(.int(Int64(partition))), left: "a.id NOT IN (SELECT id FROM c)\(left)",
                        dialect: .postgres) + ", "
            }
            let sql = """
                WITH \(parts.joined(separator: ",\n"))
                SELECT \(held) AS lease_held, \(ahead)c.*, d.d_user_id, d.d_pushed_version,
                    \(OutboxEvents.sharedItem(rows: "c"))
                FROM (SELECT 1) AS one LEFT JOIN c ON true LEFT JOIN d ON d.d_token = c.token
                """
            let rows = try await database.statement(sql, binds.values)
            guard let first = rows.first, let leaseHeld = try first["lease_held"].int64 else {
                throw StoreError.corrupt("the claim returned no lease row")
            }
            if let lease, leaseHeld == 0 { throw FleetQueries.leaseLost(lease) }
            var claimedRows: [SQLRow] = []
            var devices: [String: PushGuard.Device] = [:]
            for row in rows {
                // Without a due row the statement returns one row of NULLs.
                guard try row["id"].int64 != nil else { continue }
                claimedRows.append(row)
                if let token = try row["token"].string, let user = try row["d_user_id"].string,
                    let version = try row["d_pushed_version"].int64
                {
                    devices[token] = PushGuard.Device(user: user, pushedVersion: version)
                }
            }
            return ClaimRead(
                rows: claimedRows, devices: devices, events: try OutboxEvents.shared(in: rows),
                ahead: partition == nil ? nil : try DeliveryQueries.decodeAhead(first))
        }

        /// SQLite: the same parts as statements of one transaction.
        func runInTransaction(_ database: any SQLTransactor) async throws -> ClaimRead {
            try await database.transaction { sql in
                try await DeliveryQueries.write(recording, sql: sql)
                if let lease { try await FleetQueries.checkLease(lease, sql: sql) }
                var binds = SQLBinds()
                let due = DeliveryQueries.dueIDs(
                    partition: partition, limit: limit, skipClaimedBefore: skipClaimedBefore, binds: &binds,
                    dialect: sql.dialect)
                let rows = try await sql.query(claimed(due: due, binds: &binds, dialect: sql.dialect), binds.values)
                var tokens = SQLRowSet([("token", .text)])
                for token in Set(try rows.compactMap { try $0["token"].string }).sorted() {
                    tokens.append([.text(token)])
                }
                var devices: [String: PushGuard.Device] = [:]
                if !tokens.isEmpty {
                    var deviceBinds = SQLBinds()
                    let source = tokens.table("s", binds: &deviceBinds, dialect: sql.dialect)
                    for row in try await sql.query(
                        "SELECT token, user_id, pushed_version FROM devices WHERE "
                            + sql.dialect.among("token", "SELECT token FROM \(source)"),
                        deviceBinds.values)
                    {
                        guard let token = try row["token"].string, let user = try row["user_id"].string,
                            let version = try row["pushed_version"].int64
                        else { throw StoreError.corrupt("bad devices row") }
                        devices[token] = PushGuard.Device(user: user, pushedVersion: version)
                    }
                }
                var ahead: OutboxAhead?
                if let partition {
                    var aheadBinds = SQLBinds()
                    var claimedIDs = SQLRowSet([("id", .int)])
                    for id in try rows.compactMap({ try $0["id"].int64 }).sorted() { claimedIDs.append([.int(id)]) }
                    let taken = claimedIDs.table("t", binds: &aheadBinds, dialect: sql.dialect)
                    let items = DeliveryQueries.aheadItems(
                        partition: aheadBinds.add(.int(Int64(partition))),
                        left: "a.id NOT IN (SELECT id FROM \(taken))", dialect: sql.dialect)
                    let read = try await sql.query("SELECT \(items)", aheadBinds.values)
                    ahead = try read.first.map(DeliveryQueries.decodeAhead)
                }
                return ClaimRead(
                    rows: rows, devices: devices, events: try await OutboxEvents.read(for: rows, sql: sql),
                    ahead: ahead)
            }
        }
    }

    /// Rebuilds `rows` (pushes older than what their devices already got, see ``PushGuard``) with their users'
    /// current counts and badge at fresh versions: each user's `badge_version` goes up by its number of rebuilt
    /// pushes, and each row is rewritten, so that a crash before its record sends the same version again. Returns
    /// the rebuilt pushes by outbox id; a push of an unknown user (no users row) is not among them.
    private static func rebuild(
        _ rows: [OutboxPush], policy: BadgePolicy, sql: any SQLExecutor
    ) async throws -> [Int64: PlannedPush] {
        var counts: [String: Int64] = [:]
        for row in rows { counts[row.push.recipient, default: 0] += 1 }
        var set = SQLRowSet([("user_id", .text), ("k", .int)])
        for (user, count) in counts.sorted(by: { $0.key < $1.key }) { set.append([.text(user), .int(count)]) }
        // Qualified (the FROM list has a set with columns of the same names) and named back to the plain names.
        let columns = EventRules.UserRow.columns.split(separator: ",").map { column in
            let name = column.drop(while: { $0 == " " })
            return "users.\(name) AS \(name)"
        }
        var binds = SQLBinds()
        let statement =
            "UPDATE users SET badge_version = users.badge_version + s.k FROM "
            + "\(set.table("s", binds: &binds, dialect: sql.dialect)) WHERE users.user_id = s.user_id "
            + "RETURNING users.user_id AS user_id, \(columns.joined(separator: ", "))"
        var current: [String: EventRules.UserRow] = [:]
        for row in try await sql.query(statement, binds.values) {
            guard let user = try row["user_id"].string else { throw StoreError.corrupt("users row without id") }
            var state = try EventRules.UserRow(row: row)
            state.badgeVersion -= counts[user] ?? 0
            current[user] = state
        }
        var rebuilt: [Int64: PlannedPush] = [:]
        var rewritten = SQLRowSet(
            [
                ("id", .int), ("unread_notifications", .int), ("unseen_notifications", .int),
                ("unread_messages", .int), ("badge", .int), ("badge_version", .int), ("previews", .bool),
            ])
        for row in rows {
            guard var user = current[row.push.recipient] else { continue }
            user.badgeVersion += 1
            current[row.push.recipient] = user
            let push = user.current(row.push, policy: policy)
            rebuilt[row.id] = push
            rewritten.append([
                .int(row.id), .int(Int64(push.counts.unreadNotifications)),
                .int(Int64(push.counts.unseenNotifications)), .int(Int64(push.counts.unreadMessages)),
                .int(Int64(push.badge)), .int(push.badgeVersion), .bool(push.previews),
            ])
        }
        guard !rewritten.isEmpty else { return rebuilt }
        var rowBinds = SQLBinds()
        try await sql.execute(
            """
            UPDATE outbox SET unread_notifications = s.unread_notifications,
                unseen_notifications = s.unseen_notifications, unread_messages = s.unread_messages,
                badge = s.badge, badge_version = s.badge_version, previews = s.previews
            FROM \(rewritten.table("s", binds: &rowBinds, dialect: sql.dialect)) WHERE outbox.id = s.id
            """,
            rowBinds.values)
        return rebuilt
    }

    /// The ids of the due rows, oldest first, as one `SELECT`: rows whose next attempt is due at the database's now
    /// (``FleetQueries/statementNow(_:)``, the same instant for every comparison) and that no earlier row of the
    /// same token waits ahead of, at most `limit`, and at most ``ClaimedPushes/perDeviceLimit`` of one token (its
    /// oldest: the rest wait for the next claims); its values go to `binds`. `excluding` names a table of ids (column `id`) to leave out, and not to wait behind
    /// either.
    ///
    /// How, by queue heads: the claim walks the partition's queued tokens that have a row never attempted (one
    /// descent of the partial index `outbox_partition_fresh` each, at most ``claimHorizon``) and adds those with a
    /// retried row that is due (`outbox_partition_retry`, by when they are due, at most ``claimHorizon``): a device
    /// whose rows all wait for a retry is not visited at all, so however many devices wait (an FCM outage, one
    /// app's revoked key) the others are claimed at once. It takes each token's oldest row (its head),
    /// keeps the heads that do not wait, the `limit` oldest of them, and reads at most ``headWindow`` rows of each
    /// of those tokens from its head. So a claim costs what the partition's queued devices and the rows it takes
    /// cost, not what one device holds: a device with a million queued pushes is one head, and its other devices
    /// are in the same claim (fair delivery: a backlog delays them by one round at most). Within a token, window
    /// sums over its rows in id order decide: a row is taken when it is a candidate (due, in the partition, not in
    /// doubt, not excluded), no earlier row of its token waits, and fewer than the bound of its token's earlier
    /// rows were taken.
    ///
    /// Across partitions: a device's pushes are normally all in its user's partition, since a user's events are
    /// routed by the user id. A producer that routes an event by another key puts its pushes in another partition,
    /// whose delivery loop would send them while the user's partition sends the earlier ones: the device would see
    /// `badge_version` go back and end on a stale badge. So a partition's claim takes a token's rows only while no
    /// earlier row of the token waits in another partition (the head must be the token's first row anywhere, and a
    /// row of another partition inside the head's window holds back the rows after it): a device's pushes go out in
    /// planning order whichever partitions hold them. The check is one descent of `outbox_token_id` per head.
    static func dueIDs(
        partition: Int?, limit: Int, skipClaimedBefore: Int64?, binds: inout SQLBinds, dialect: SQLDialect,
        excluding: String? = nil
    ) -> String {
        let limit = binds.add(.int(Int64(limit)))
        // The conditions on a row other than its token's earlier rows: due, in the partition, not in doubt, not
        // excluded.
        var filters: [(String) -> String] = []
        var inPartition: (String) -> String = { _ in "" }
        // A row of the same token in another partition (see "Across partitions" above); nil for a claim of every
        // partition.
        var elsewhere: ((String) -> String)?
        if let excluding { filters.append { "\($0).id NOT IN (SELECT id FROM \(excluding))" } }
        if let partition {
            let placeholder = binds.add(.int(Int64(partition)))
            filters.append { "\($0).partition_id = \(placeholder)" }
            inPartition = { "\($0).partition_id = \(placeholder) AND " }
            elsewhere = { "\($0).partition_id <> \(placeholder)" }
        }
        if let skipClaimedBefore {
            let placeholder = binds.add(.int(skipClaimedBefore))
            filters.append { "(\($0).claimed_epoch IS NULL OR \($0).claimed_epoch >= \(placeholder))" }
        }
        let now = FleetQueries.statementNow(dialect)
        let due: (String) -> String = { "\($0).next_attempt_at <= \(now)" }
        // A row that holds back its token's later rows: not due yet. (A head is never one of the rows the same
        // statement removes, the previous round's: see `waiting` for the others.)
        let waitingHead: (String) -> String = { "\($0).next_attempt_at > \(now)" }
        // Rows the same statement removes (the previous round's, just recorded) hold nothing back any more. A row
        // of the token in another partition always holds back the rows after it.
        let waiting: (String) -> String = { [waitingHead, elsewhere] row in
            let own = waitingHead(row) + (excluding.map { " AND \(row).id NOT IN (SELECT id FROM \($0))" } ?? "")
            guard let elsewhere else { return own }
            return "(\(elsewhere(row)) OR (\(own)))"
        }
        // A head with an earlier row of its token in another partition waits for it. A scalar subquery, so that it
        // stays one descent of `outbox_token_id` per head: as `NOT EXISTS`, PostgreSQL plans an anti-join that
        // reads every row of the other partitions (dead ones included) in every claim.
        let firstOfToken =
            elsewhere.map { elsewhere in
                " AND (SELECT e.id FROM outbox e WHERE e.token = h.token AND e.id < h.head AND \(elsewhere("e"))"
                    + " ORDER BY e.id LIMIT 1) IS NULL"
            } ?? ""
        func candidate(_ row: String) -> String {
            ([due(row)] + filters.map { $0(row) }).joined(separator: " AND ")
        }
        let notRemoved = excluding.map { " AND y.id NOT IN (SELECT id FROM \($0))" } ?? ""
        let rows = "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"
        let inOrder = "OVER (PARTITION BY o.token ORDER BY o.id \(rows))"
        // The queued tokens: of one partition, those with a row never attempted (walked in token order over
        // `outbox_partition_fresh`) and those with a retried row that is due (the soonest due first, over
        // `outbox_partition_retry`), each at most `claimHorizon`; a token whose rows all wait for a retry is in
        // neither. Of every partition (a claim without a partition), every token with rows, in token order.
        let walked = partition == nil ? "" : "x.attempts = 0 AND "
        var retrying = ""
        var retried = ""
        if partition != nil {
            retrying = """
                retrying AS (SELECT r.token FROM outbox r WHERE \(inPartition("r"))r.attempts > 0
                    AND r.next_attempt_at <= \(now) ORDER BY r.next_attempt_at LIMIT \(claimHorizon)),
                """
            retried = " UNION SELECT token FROM retrying"
        }
        let ids = """
            WITH RECURSIVE queued(token, n) AS (
                SELECT (SELECT x.token FROM outbox x WHERE \(inPartition("x"))\(walked)x.token IS NOT NULL
                    ORDER BY x.token LIMIT 1), 1
                UNION ALL
                SELECT (SELECT x.token FROM outbox x WHERE \(inPartition("x"))\(walked)x.token > q.token
                    ORDER BY x.token LIMIT 1), q.n + 1
                FROM queued q WHERE q.token IS NOT NULL AND q.n < \(claimHorizon)),
            \(retrying)
            tokens AS (SELECT token FROM queued WHERE token IS NOT NULL\(retried)),
            heads AS (SELECT q.token, (SELECT y.id FROM outbox y WHERE \(inPartition("y"))y.token = q.token\(notRemoved)
                ORDER BY y.id LIMIT 1) AS head FROM tokens q),
            chosen AS (SELECT h.token, h.head FROM heads h JOIN outbox hr ON hr.id = h.head
                WHERE NOT (\(waitingHead("hr")))\(firstOfToken) ORDER BY h.head LIMIT \(limit)),
            spans AS MATERIALIZED (SELECT c.token, c.head, coalesce((SELECT k.id FROM outbox k
                WHERE \(inPartition("k"))k.token = c.token AND k.id >= c.head ORDER BY k.id
                LIMIT 1 OFFSET \(headWindow - 1)), \(Int64.max)) AS last FROM chosen c),
            ranked AS (SELECT o.id, CASE WHEN \(candidate("o")) THEN 1 ELSE 0 END AS ok,
                    sum(CASE WHEN \(waiting("o")) THEN 1 ELSE 0 END) \(inOrder) AS blocked,
                    sum(CASE WHEN \(candidate("o")) THEN 1 ELSE 0 END) \(inOrder) AS taken
                FROM spans c JOIN outbox o ON o.token = c.token AND o.id BETWEEN c.head AND c.last)
            SELECT id FROM ranked WHERE ok = 1 AND blocked = 0 AND taken <= \(ClaimedPushes.perDeviceLimit)
            ORDER BY id LIMIT \(limit)
            """
        // PostgreSQL locks the rows in id order before the claim updates them (window sums cannot be selected
        // `FOR UPDATE` themselves), as every other writer of a partition's rows does: two claims, or a claim and a
        // statement over many rows, never wait for each other in a cycle.
        guard dialect == .postgres else { return ids }
        return "SELECT l.id FROM outbox l WHERE l.id IN (\(ids)) ORDER BY l.id\(dialect.forUpdate)"
    }

    /// How many rows of one token a claim reads from its head (see
    /// ``dueIDs(partition:limit:skipClaimedBefore:binds:dialect:excluding:)``): twice
    /// ``ClaimedPushes/perDeviceLimit``, so that rows in doubt or held at the head of a token leave room for its
    /// share.
    static let headWindow = 2 * ClaimedPushes.perDeviceLimit

    /// How many queued tokens of a partition a claim visits at most (see
    /// ``dueIDs(partition:limit:skipClaimedBefore:binds:dialect:excluding:)``), in token order: the claim costs
    /// one index descent per queued device, so without a bound a provider outage with every device of a large
    /// partition queued made every claim read all of them. Devices whose rows all wait for a retry are not among
    /// them; a device past the first `claimHorizon` tokens with rows never attempted (devices waiting for a retry
    /// with later pushes queued behind it count) waits until fewer are queued ahead of it in token order.
    static let claimHorizon = 20_000

    /// Whether a claim's rows (with a `token` column; rows without an id, as a fenced claim returns when nothing
    /// was due, are not counted) hold ``ClaimedPushes/perDeviceLimit`` rows of one token: more of it may be due.
    static func reachedDeviceLimit(_ rows: [SQLRow]) throws -> Bool {
        var counts: [String: Int] = [:]
        for row in rows {
            guard try row["id"].int64 != nil, let token = try row["token"].string else { continue }
            counts[token, default: 0] += 1
            if counts[token, default: 0] >= ClaimedPushes.perDeviceLimit { return true }
        }
        return false
    }

}

extension DeliveryQueries {
    /// Moves `unreadable` outbox rows into `refused_pushes` (id, user, token, partition, every column as text, the
    /// reason, the database's time; an alert's event from `events` when the row names it) and deletes them from the
    /// outbox, inside the caller's transaction; returns the refusals (see ``RefusedPush``). Two statements, however
    /// many rows.
    static func refuse(
        _ unreadable: [(row: SQLRow, why: OutboxRow.Unreadable)], events: OutboxEvents, sql: any SQLExecutor
    ) async throws -> [RefusedPush] {
        guard !unreadable.isEmpty else { return [] }
        var refused: [RefusedPush] = []
        var set = SQLRowSet(
            [
                ("outbox_id", .int), ("user_id", .text), ("token", .text), ("partition_id", .int), ("reason", .text),
                ("detail", .text), ("outbox_row", .text),
            ])
        for (row, why) in unreadable {
            guard let id = try row["id"].int64 else { throw StoreError.corrupt("an outbox row without its id") }
            let refusal = RefusedPush(
                outboxID: id, user: try row["user_id"].string, token: try row["token"].string,
                partition: try row["partition_id"].int64.map { Int($0) }, reason: why.code, detail: why.message)
            refused.append(refusal)
            set.append([
                .int(id), .text(refusal.user), .text(refusal.token), .int(refusal.partition.map { Int64($0) }),
                .text(why.code.rawValue), .text(why.message), .text(OutboxRow.text(of: row, events: events)),
            ])
        }
        // A row can be refused once only (it leaves the outbox in the same transaction); DO NOTHING keeps a claim
        // from failing over it anyway.
        var binds = SQLBinds()
        let source = set.table("s", binds: &binds, dialect: sql.dialect)
        try await sql.execute(
            "INSERT INTO refused_pushes (outbox_id, user_id, token, partition_id, reason, detail, outbox_row, "
                + "refused_at) SELECT s.outbox_id, s.user_id, s.token, s.partition_id, s.reason, s.detail, "
                + "s.outbox_row, \(FleetQueries.now(sql.dialect)) FROM \(source) WHERE true "
                + "ON CONFLICT (outbox_id) DO NOTHING",
            binds.values)
        try await deleteOutboxRows(refused.map(\.outboxID), sql: sql)
        return refused
    }
}
