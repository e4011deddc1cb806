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
        return try await database.transaction { [recording] sql in
            if let lease, sql.dialect == .postgres {
                // A record that only removes rows joins the claim's statement; any other is written first.
                let removed = recording.onlyRemovedRows
                if removed == nil { try await write(recording, sql: sql) }
                return try await claimDueFenced(
                    partition: partition, limit: limit, policy: policy, lease: lease,
                    skipClaimedBefore: skipClaimedBefore, removing: removed ?? [], sql: sql)
            }
            try await write(recording, sql: sql)
            if let lease { try await FleetQueries.checkLease(lease, sql: sql) }
            var binds: [SQLValue] = [.int(Int64(limit))]
            let due = dueRows(
                partition: partition, skipClaimedBefore: skipClaimedBefore, epoch: lease?.epoch, binds: &binds,
                dialect: sql.dialect)
            let read: [SQLRow]
            if let lease {
                // Select, lock and mark with the claimer's epoch in one statement.
                binds.append(.int(lease.epoch))
                read = try await sql.query(
                    "UPDATE outbox SET claimed_epoch = $\(binds.count), \(releasingHold) "
                        + "WHERE \(sql.dialect.among("id", "SELECT o.id \(due)")) "
                        + "RETURNING \(OutboxRow.claimedColumns(sql.dialect))",
                    binds)
            } else {
                read = try await sql.query("SELECT \(OutboxRow.claimedColumns(sql.dialect, alias: "o")) \(due)", binds)
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

    /// The `FROM … WHERE … ORDER BY … LIMIT …` of the due rows (alias `o`), oldest first: rows whose next
    /// attempt is due at the database's now (``FleetQueries/statementNow(_:)``, the same instant for every
    /// comparison) and that no earlier row of the same token waits ahead of, at most `$1`, and at most
    /// ``ClaimedPushes/perDeviceLimit`` of one token (its oldest: the rest wait for the next claims); the
    /// partition's and the epoch's filters read placeholders appended to `binds`. `excluding` names a table of ids
    /// (column `id`) to leave out, and not to wait behind either.
    ///
    /// A claim under lease `epoch` also takes, at once, rows that an ingestion transaction claimed under an
    /// earlier epoch and held for its worker (``ApplyContext/claimsPushes``: never attempted, `next_attempt_at`
    /// in the future): that owner is gone, as with any row it claimed; and such rows do not hold back the later
    /// rows of their token. Rows held under this very epoch are its own worker's, on their way: they stay out of
    /// the claim and hold back their token's later rows until recorded.
    ///
    /// The bound per token keeps one device's backlog from filling the round (its pushes go one after another)
    /// while the other devices of the partition wait behind it; the claim still reads past that backlog in id order
    /// to reach them, at the cost of one index entry per row of it (see the conditions below).
    static func dueRows(
        partition: Int?, skipClaimedBefore: Int64?, epoch: Int64? = nil, binds: inout [SQLValue],
        dialect: SQLDialect, excluding: String? = nil
    ) -> String {
        // The conditions on a row `r` other than its token's earlier rows: due, in the partition, not in doubt,
        // not excluded.
        var filters: [(String) -> String] = []
        if let excluding { filters.append { "\($0).id NOT IN (SELECT id FROM \(excluding))" } }
        // The claim reads no further than the partition's oldest `claimHorizon` rows, so that its cost is bounded
        // whatever one device holds (see ``claimHorizon``).
        var horizon = ""
        if let partition {
            binds.append(.int(Int64(partition)))
            let placeholder = "$\(binds.count)"
            filters.append { "\($0).partition_id = \(placeholder)" }
            horizon =
                " AND o.id <= (SELECT coalesce(max(h.id), 0) FROM (SELECT id FROM outbox WHERE partition_id = "
                + "\(placeholder) ORDER BY id LIMIT \(claimHorizon)) h)"
        }
        if let skipClaimedBefore {
            binds.append(.int(skipClaimedBefore))
            let placeholder = "$\(binds.count)"
            filters.append { "(\($0).claimed_epoch IS NULL OR \($0).claimed_epoch >= \(placeholder))" }
        }
        let now = FleetQueries.statementNow(dialect)
        var due: (String) -> String = { "\($0).next_attempt_at <= \(now)" }
        // Rows the same statement removes (the previous round's, just recorded) hold nothing back any more.
        var waiting =
            "e.next_attempt_at > \(now)" + (excluding.map { " AND e.id NOT IN (SELECT id FROM \($0))" } ?? "")
        if let epoch {
            binds.append(.int(epoch))
            let placeholder = "$\(binds.count)"
            func heldBefore(_ row: String) -> String {
                "\(row).attempts = 0 AND coalesce(\(row).claimed_epoch, \(placeholder)) < \(placeholder)"
            }
            due = { "(\($0).next_attempt_at <= \(now) OR (\(heldBefore($0))))" }
            waiting += " AND NOT (\(heldBefore("e")))"
        }
        func candidate(_ row: String) -> String {
            ([due(row)] + filters.map { $0(row) }).joined(separator: " AND ")
        }
        // The rows of `o`'s token before it, as `row`: one range of the (token, id) index. On PostgreSQL
        // `(e.token, e.id) < (o.token, o.id)` rather than `e.id < o.id`, which the primary key can serve too (with
        // it, a plan made on an empty outbox read every row below `o.id` through the primary key instead). SQLite
        // reads `e.token = o.token AND e.id < o.id` as that range, and the row comparison only as "tokens up to
        // `o.token`": every entry of every smaller token, 5,000 for a row queued after a device with 5,000.
        func earlier(_ row: String) -> String {
            let before = dialect == .postgres ? "(\(row).token, \(row).id) < (o.token, o.id)" : "\(row).id < o.id"
            return "\(row).token = o.token AND \(before)"
        }
        let inOrder =
            "NOT EXISTS (SELECT 1 FROM outbox e WHERE \(earlier("e")) AND \(waiting)\(dialect.perRowSubquery))"
        // The bound per token, in this order (a `CASE` keeps it on both databases):
        // - `farBehind`: a row `versionWindow` or more badge versions past an earlier row of its token is out. The
        //   (token, id) index is read from the token's oldest row, whose version is the lowest, so for a row deep
        //   in a long backlog this costs one entry: passing over that backlog costs one entry per row. A row in the
        //   window reads its token's earlier rows, fewer than the window when versions have no gaps;
        // - `boundReached`: a row with `ClaimedPushes.perDeviceLimit` earlier rows of its token in the claim is
        //   out (at most that many entries);
        // - only a row within both reads its token's earlier rows for one that waits (`inOrder`).
        // A device's pushes are planned at consecutive versions of its user, so the count decides which rows go.
        // The window only leaves out more when the user's version jumped by more than the window less the bound
        // between two pushes (a read applied in many chunks): the claim then takes fewer rows of that device, and
        // the next claims take the rest.
        let bound = ClaimedPushes.perDeviceLimit
        let farBehind =
            "EXISTS (SELECT 1 FROM outbox v WHERE \(earlier("v")) "
            + "AND v.badge_version <= o.badge_version - \(versionWindow)\(dialect.perRowSubquery))"
        let boundReached =
            "EXISTS (SELECT 1 FROM outbox f WHERE \(earlier("f")) AND \(candidate("f")) LIMIT 1 OFFSET \(bound - 1))"
        return "FROM outbox o WHERE \(candidate("o"))\(horizon) AND CASE WHEN \(farBehind) THEN FALSE "
            + "WHEN \(boundReached) "
            + "THEN FALSE ELSE \(inOrder) END ORDER BY o.id LIMIT $1" + dialect.forUpdate
    }

    /// How many badge versions past its token's oldest outbox row a row may be and still be claimed (see
    /// ``dueRows(partition:skipClaimedBefore:epoch:binds:dialect:excluding:)``): a few times
    /// ``ClaimedPushes/perDeviceLimit``, so that the count decides, and small, since a row in the window reads its
    /// token's earlier rows.
    static let versionWindow = 4 * ClaimedPushes.perDeviceLimit

    /// How many of a partition's oldest outbox rows a claim reads at most (see
    /// ``dueRows(partition:skipClaimedBefore:epoch:binds:dialect:excluding:)``): a claim passes over a device's
    /// backlog one index entry a row, so without a bound one device with a million queued pushes made every claim of
    /// its partition outlast the statement timeout, and nothing of the partition was sent. Within the horizon a
    /// backlog delays the others by one round at most (fair delivery); a device whose pushes are queued behind more
    /// than this many rows of the partition waits until the rows ahead drain below it.
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

    /// The `SET` item with which a claim releases a row it takes from a hold (``dueRows``): a claimed row that was
    /// never attempted is due again at once if it comes back (its claim stopped before sending it).
    static let releasingHold = "next_attempt_at = CASE WHEN attempts = 0 THEN 0 ELSE next_attempt_at END"

    /// Runs the push guard over `rows` (locked, in id order) and writes its decisions: dropped rows are deleted,
    /// claimed ones are marked with the claimer's epoch (unless `marked` says the select did it) and rebuilt ones
    /// rewritten, and each token's `pushed_version` moves up. Returns what to send, in id order. `devices` are
    /// the rows' devices when the caller has already read and locked them (see `claimDueFenced`).
    static func claim(
        _ rows: [OutboxPush], policy: BadgePolicy, lease: PartitionLease?, marked alreadyMarked: Bool = false,
        devices: [String: PushGuard.Device]? = nil, sql: any SQLExecutor
    ) async throws -> [ClaimedPush] {
        guard !rows.isEmpty else { return [] }
        let stored: [String: PushGuard.Device]
        if let devices {
            stored = devices
        } else {
            stored = try await lockDevices(of: rows, sql: sql)
        }
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
            for row in try await sql.query(
                "UPDATE users SET badge_version = users.badge_version + s.k FROM "
                    + "\(set.table("s", bind: 1, dialect: sql.dialect)) WHERE users.user_id = s.user_id "
                    + "RETURNING users.user_id AS user_id, \(columns.joined(separator: ", "))",
                [set.bind])
            {
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
            try await sql.execute(
                """
                UPDATE outbox SET claimed_epoch = s.claimed_epoch, unread_notifications = s.unread_notifications,
                    unseen_notifications = s.unseen_notifications, unread_messages = s.unread_messages,
                    badge = s.badge, badge_version = s.badge_version, previews = s.previews
                FROM \(marked.table("s", bind: 1, dialect: sql.dialect)) WHERE outbox.id = s.id
                """,
                [marked.bind])
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
            try await sql.execute(
                "UPDATE outbox SET next_attempt_at = \(FleetQueries.statementNow(sql.dialect)) + s.delay, "
                    + "attempts = outbox.attempts + 1 FROM \(set.table("s", bind: 1, dialect: sql.dialect)) "
                    + "WHERE outbox.id = s.id",
                [set.bind])
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
            let source = set.table("s", bind: 1, dialect: sql.dialect)
            let tokens = sql.dialect.among("token", "SELECT token FROM \(source)")
            try await sql.execute("UPDATE devices SET active = FALSE WHERE \(tokens)", [set.bind])
            try await sql.execute("DELETE FROM outbox WHERE \(tokens)", [set.bind])
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
        try await sql.execute(
            "UPDATE devices SET pushed_version = s.pushed_version FROM \(set.table("s", bind: 1, dialect: sql.dialect)) "
                + "WHERE devices.token = s.token AND devices.user_id = s.user_id"
                + (onlyLowering ? " AND devices.pushed_version > s.pushed_version" : ""),
            [set.bind])
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
        return (
            "DELETE FROM outbox WHERE \(dialect.among("id", "SELECT id FROM \(set.table("s", bind: 1, dialect: dialect))"))",
            [set.bind]
        )
    }
}
