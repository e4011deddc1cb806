import BadgeCore
import BadgeSupport

/// The delivery stage's queries, written once for both backends: claiming many pushes in one transaction (lease
/// check, the per-device push guard, coalescing) and recording many outcomes in another. Each costs a constant
/// number of statements however many pushes it covers.
///
/// Times (`next_attempt_at`, `created_at`) are microseconds since the epoch by the database's clock
/// (``FleetQueries/statementNow(_:)``): workers hand in durations (a retry's delay) and read ages, never their own
/// clock's time, so a worker whose clock is off schedules and claims exactly as the others do.
enum DeliveryQueries {
    /// Claims up to `limit` due pushes of `partition` (all partitions when nil), oldest first: rows whose next
    /// attempt is due by the database's clock and that no earlier row of the same token waits ahead of (a
    /// device's pushes go out in order). Each claimed push comes with its age (``OutboxPush/age``). With
    /// `skipClaimedBefore`, rows claimed under an earlier lease epoch are left alone (see `LeaseTerm.isInDoubt`).
    /// Due rows that cannot be read are moved to `refused_pushes` in the claim's transaction
    /// (``refuse(_:events:sql:)``) and returned in ``ClaimedPushes/refused``.
    static func claimDue(
        partition: Int?, limit: Int, policy: BadgePolicy, lease: PartitionLease?,
        skipClaimedBefore: Int64?, recording: DeliveryRecord = DeliveryRecord(), database: any SQLTransactor
    ) async throws -> ClaimedPushes {
        guard limit > 0 else {
            try await record(recording, database: database)
            return .none
        }
        var recording = recording
        if let lease, database.dialect == .postgres, let removed = recording.onlyRemovedRows {
            // The usual round: one statement on its own (see `claimDueAtOnce`); when it was not that simple, it
            // removed the record's rows and the transaction below claims.
            if let claimed = try await claimDueAtOnce(
                partition: partition, limit: limit, lease: lease, skipClaimedBefore: skipClaimedBefore,
                removing: removed, database: database)
            {
                return claimed
            }
            recording = DeliveryRecord()
        }
        // One claim in a transaction, on both databases, for what the one statement does not cover (a record with
        // retries or dead tokens, a round the push guard must rebuild or drop): rare rounds, so the statements it
        // takes more than the one-statement claim do not count.
        return try await database.transaction { [recording] sql in
            try await write(recording, sql: sql)
            if let lease { try await FleetQueries.checkLease(lease, sql: sql) }
            var binds = SQLBinds()
            let due = dueIDs(
                partition: partition, limit: limit, skipClaimedBefore: skipClaimedBefore, binds: &binds,
                dialect: sql.dialect)
            let read: [SQLRow]
            if let lease {
                // Select, lock and mark with the claimer's epoch in one statement.
                read = try await sql.query(
                    "UPDATE outbox SET claimed_epoch = \(binds.add(.int(lease.epoch))) "
                        + "WHERE \(sql.dialect.among("id", due)) RETURNING \(OutboxRow.claimedColumns(sql.dialect))",
                    binds.values)
            } else {
                read = try await sql.query(
                    "SELECT \(OutboxRow.claimedColumns(sql.dialect, alias: "o")) FROM outbox o "
                        + "WHERE \(sql.dialect.among("o.id", due)) ORDER BY o.id",
                    binds.values)
            }
            // Each event of the alerts once; rows the code cannot read are moved aside, the claim goes on with the
            // others.
            var events = try await OutboxEvents.read(for: read, sql: sql)
            let (rows, unreadable) = try OutboxRow.decodeAll(read, events: &events)
            let refused = try await refuse(unreadable, events: events, sql: sql)
            let claimed = try await claim(
                rows.sorted { $0.id < $1.id }, policy: policy, lease: lease, marked: lease != nil, sql: sql)
            let reachedLimit = try read.count >= limit || reachedDeviceLimit(read)
            return ClaimedPushes(pushes: claimed, reachedLimit: reachedLimit, refused: refused)
        }
    }

    /// What waits in `partition`'s outbox (see ``OutboxAhead``): one statement for the earliest retry (one descent
    /// of `outbox_partition_retry`) and whether a row never attempted is there (the first such row of `outbox_partition_fresh`); when there is one, a second for the other partitions that
    /// hold the first row of such rows' tokens (at most ``lookAheadTokens`` tokens, one descent of `outbox_token_id`
    /// each), which on PostgreSQL also notifies them on `channel`.
    static func ahead(
        partition: Int, channel: String?, database: any SQLTransactor
    ) async throws -> OutboxAhead {
        var binds = SQLBinds()
        let placeholder = binds.add(.int(Int64(partition)))
        let now = FleetQueries.statementNow(database.dialect)
        let rows = try await database.read(
            "SELECT (SELECT min(r.next_attempt_at) FROM outbox r WHERE r.partition_id = \(placeholder) "
                + "AND r.attempts > 0) - \(now) AS retry_in, "
                + "(SELECT count(*) FROM (SELECT 1 FROM outbox f WHERE f.partition_id = \(placeholder) "
                + "AND f.attempts = 0 LIMIT 1) AS one) AS held",
            binds.values)
        let retryIn = try rows.first?["retry_in"].int64.map { Duration.microseconds(max(0, $0)) }
        guard try (rows.first?["held"].int64 ?? 0) > 0 else { return OutboxAhead(retryIn: retryIn, heldBack: false) }
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

    /// The most tokens of a partition's pushes held back whose holders a look-ahead looks for
    /// (``ahead(partition:channel:database:)``).
    static let lookAheadTokens = 64

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
        // A head with an earlier row of its token in another partition waits for it.
        let firstOfToken =
            elsewhere.map { elsewhere in
                " AND NOT EXISTS (SELECT 1 FROM outbox e WHERE e.token = h.token AND e.id < h.head AND \(elsewhere("e")))"
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

    /// Runs the push guard over `rows` (locked, in id order) and writes its decisions: dropped rows are deleted,
    /// claimed ones are marked with the claimer's epoch (unless `marked` says the select did it) and rebuilt ones
    /// rewritten, and each token's `pushed_version` moves up. Returns what to send, in id order.
    static func claim(
        _ rows: [OutboxPush], policy: BadgePolicy, lease: PartitionLease?, marked alreadyMarked: Bool = false,
        sql: any SQLExecutor
    ) async throws -> [ClaimedPush] {
        guard !rows.isEmpty else { return [] }
        let stored = try await lockDevices(of: rows, sql: sql)
        var guardState = PushGuard(devices: stored)
        let decisions = guardState.decide(rows.map(\.push))

        // Fresh versions for rebuilt alerts: each user's version goes up by the number of its rebuilt pushes.
        var rebuilds: [String: Int64] = [:]
        for (row, decision) in zip(rows, decisions) where decision == .rebuild {
            rebuilds[row.push.recipient, default: 0] += 1
        }
        var current: [String: EventRules.UserRow] = [:]
        if !rebuilds.isEmpty {
            var set = SQLRowSet([("user_id", .text), ("k", .int)])
            for (user, count) in rebuilds.sorted(by: { $0.key < $1.key }) { set.append([.text(user), .int(count)]) }
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
            for row in try await sql.query(statement, binds.values) {
                guard let user = try row["user_id"].string else { throw StoreError.corrupt("users row without id") }
                var state = try EventRules.UserRow(row: row)
                state.badgeVersion -= rebuilds[user] ?? 0
                current[user] = state
            }
        }

        var claimed: [ClaimedPush] = []
        var dropped: [Int64] = []
        var marked = SQLRowSet(
            [
                ("id", .int), ("claimed_epoch", .int), ("unread_notifications", .int),
                ("unseen_notifications", .int), ("unread_messages", .int), ("badge", .int), ("badge_version", .int),
                ("previews", .bool),
            ])
        var pushedVersions: [String: (user: String, version: Int64)] = [:]
        for (row, decision) in zip(rows, decisions) {
            var push = row.push
            switch decision {
            case .drop:
                dropped.append(row.id)
                continue
            case .rebuild:
                // An unknown user (no users row) has nothing to rebuild from: the alert cannot be sent.
                guard var user = current[push.recipient] else {
                    dropped.append(row.id)
                    continue
                }
                user.badgeVersion += 1
                current[push.recipient] = user
                push = user.current(push, policy: policy)
            case .send:
                break
            }
            if stored[push.token] != nil {
                pushedVersions[push.token] = (push.recipient, push.badgeVersion)
            }
            if (lease != nil && !alreadyMarked) || decision == .rebuild {
                marked.append([
                    .int(row.id), .int(lease?.epoch), .int(Int64(push.counts.unreadNotifications)),
                    .int(Int64(push.counts.unseenNotifications)), .int(Int64(push.counts.unreadMessages)),
                    .int(Int64(push.badge)), .int(push.badgeVersion), .bool(push.previews),
                ])
            }
            claimed.append(ClaimedPush(outbox: row, push: push))
        }
        try await deleteOutboxRows(dropped, sql: sql)
        if !marked.isEmpty {
            var binds = SQLBinds()
            let statement = """
                UPDATE outbox SET claimed_epoch = s.claimed_epoch, unread_notifications = s.unread_notifications,
                    unseen_notifications = s.unseen_notifications, unread_messages = s.unread_messages,
                    badge = s.badge, badge_version = s.badge_version, previews = s.previews
                FROM \(marked.table("s", binds: &binds, dialect: sql.dialect)) WHERE outbox.id = s.id
                """
            try await sql.execute(statement, binds.values)
        }
        var versions: [(token: String, user: String, version: Int64)] = []
        for (token, entry) in pushedVersions.sorted(by: { $0.key < $1.key })
        where entry.version != stored[token]?.pushedVersion {
            versions.append((token, entry.user, entry.version))
        }
        try await setPushedVersions(versions, onlyLowering: false, sql: sql)
        return claimed
    }

    /// Records what a delivery round did, in one transaction; a round that only removes rows (pushes sent or
    /// failed for good, the usual case) in one statement on its own.
    static func record(_ record: DeliveryRecord, database: any SQLTransactor) async throws {
        guard !record.isEmpty else { return }
        if let removed = record.onlyRemovedRows {
            let delete = deleteStatement(removed, dialect: database.dialect)
            _ = try await database.statement(delete.sql, delete.binds)
            return
        }
        try await database.transaction { sql in try await write(record, sql: sql) }
    }

    /// Writes `record` inside the caller's transaction.
    static func write(_ record: DeliveryRecord, sql: any SQLExecutor) async throws {
        guard !record.isEmpty else { return }
        try await deleteOutboxRows(record.sent + record.failed, sql: sql)
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
            // Each device's first push that must wait is the lowest version of the round that did not go out
            // (a device's pushes go in order and stop at the first that must wait).
            var lowest: [String: DeliveryRecord.Retry] = [:]
            for retry in record.retries {
                if let known = lowest[retry.token], known.badgeVersion <= retry.badgeVersion { continue }
                lowest[retry.token] = retry
            }
            try await setPushedVersions(
                lowest.sorted(by: { $0.key < $1.key }).map { ($0.key, $0.value.user, $0.value.badgeVersion) },
                onlyLowering: true, sql: sql)
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

    /// Sets the `pushed_version` of devices (only while the token belongs to that user), in one statement; with
    /// `onlyLowering`, only where it is higher now.
    private static func setPushedVersions(
        _ versions: [(token: String, user: String, version: Int64)], onlyLowering: Bool, sql: any SQLExecutor
    ) async throws {
        guard !versions.isEmpty else { return }
        var set = SQLRowSet([("token", .text), ("user_id", .text), ("pushed_version", .int)])
        for entry in versions { set.append([.text(entry.token), .text(entry.user), .int(entry.version)]) }
        var binds = SQLBinds()
        let statement =
            "UPDATE devices SET pushed_version = s.pushed_version FROM \(set.table("s", binds: &binds, dialect: sql.dialect)) "
            + "WHERE devices.token = s.token AND devices.user_id = s.user_id"
            + (onlyLowering ? " AND devices.pushed_version > s.pushed_version" : "")
        try await sql.execute(statement, binds.values)
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
