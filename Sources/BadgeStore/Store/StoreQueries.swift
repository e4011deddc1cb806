import BadgeCore

/// The outbox's columns and how a ``PlannedPush`` maps to them and back.
enum OutboxRow {
    static let insertColumns =
        "user_id, event_id, event_type, token, provider, topic, environment, kind, event_json, "
        + "unread_notifications, unseen_notifications, unread_messages, badge, badge_version, previews, partition_id, "
        + "created_at"

    /// ``insertColumns`` with the id first and the delivery state last (claim epoch, attempts, next attempt).
    static let selectColumns = "id, " + insertColumns + ", claimed_epoch, attempts, next_attempt_at"

    /// An empty row set with the columns of ``insertColumns``, for ``values(of:eventJSON:partition:createdAt:)`` rows.
    static func rowSet() -> SQLRowSet {
        SQLRowSet(
            [
                ("user_id", .text), ("event_id", .text), ("event_type", .text), ("token", .text), ("provider", .text),
                ("topic", .text), ("environment", .text), ("kind", .text), ("event_json", .text),
                ("unread_notifications", .int), ("unseen_notifications", .int), ("unread_messages", .int),
                ("badge", .int), ("badge_version", .int), ("previews", .bool), ("partition_id", .int),
                ("created_at", .int),
            ])
    }

    /// The values of ``insertColumns`` for `push`, planned at `createdAt` (microseconds since the epoch).
    static func values(of push: PlannedPush, eventJSON: String?, partition: Int?, createdAt: Int64) -> [SQLValue] {
        [
            .text(push.recipient), .text(push.eventID), .text(push.eventType.rawValue), .text(push.token),
            .text(push.provider.rawValue), .text(push.topic), .text(push.environment?.rawValue),
            .text(push.kind.isAlert ? "alert" : "badge"), push.kind.isAlert ? .text(eventJSON) : .null,
            .int(Int64(push.counts.unreadNotifications)), .int(Int64(push.counts.unseenNotifications)),
            .int(Int64(push.counts.unreadMessages)), .int(Int64(push.badge)), .int(push.badgeVersion),
            .bool(push.previews), .int(partition.map(Int64.init)), .int(createdAt),
        ]
    }

    /// Rebuilds a push from the cells of ``selectColumns``.
    static func decode(_ cells: [SQLValue]) throws -> OutboxPush {
        guard cells.count == 21, let id = cells[0].int64, let recipient = cells[1].string,
            let eventID = cells[2].string, let eventType = cells[3].string.flatMap(EventType.init(rawValue:)),
            let token = cells[4].string, let provider = cells[5].string.flatMap(PushProvider.init(rawValue:)),
            let kindName = cells[8].string, let unreadNotifications = cells[10].int64,
            let unseenNotifications = cells[11].int64, let unreadMessages = cells[12].int64,
            let badge = cells[13].int64, let badgeVersion = cells[14].int64, let previews = cells[15].bool
        else { throw StoreError.corrupt("bad outbox row") }
        let environment: APNsEnvironment?
        if let name = cells[7].string {
            guard let value = APNsEnvironment(rawValue: name) else { throw StoreError.corrupt("bad environment") }
            environment = value
        } else {
            environment = nil
        }
        let kind: PushKind
        switch kindName {
        case "badge":
            kind = .badgeOnly
        case "alert":
            guard let text = cells[9].string else { throw StoreError.corrupt("alert outbox row \(id) without event") }
            kind = .alert(try decodeEvent(text, outboxID: id))
        default:
            throw StoreError.corrupt("bad outbox kind \(kindName)")
        }
        let push = PlannedPush(
            recipient: recipient, eventID: eventID, eventType: eventType, token: token, provider: provider,
            topic: cells[6].string, environment: environment, kind: kind,
            counts: Counts(
                unreadNotifications: Int(unreadNotifications), unseenNotifications: Int(unseenNotifications),
                unreadMessages: Int(unreadMessages)),
            badge: Int(badge), badgeVersion: badgeVersion, previews: previews)
        return OutboxPush(
            id: id, push: push, claimedEpoch: cells[18].int64, attempts: Int(cells[19].int64 ?? 0),
            createdAt: cells[17].int64 ?? 0, nextAttemptAt: cells[20].int64 ?? 0)
    }

    private static func decodeEvent(_ text: String, outboxID: Int64) throws -> Event {
        let json: JSONValue
        do {
            json = try JSONValue.parse(text)
        } catch {
            throw StoreError.corrupt("outbox row \(outboxID): event is not JSON: \(error)")
        }
        switch EventDecoder.decode(json: json) {
        case .success(let event): return event
        case .failure(let error): throw StoreError.corrupt("outbox row \(outboxID): bad event: \(error)")
        }
    }
}

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
            "SELECT token, provider, topic, environment FROM devices WHERE user_id = $1 AND active"
                + (lock ? sql.dialect.forKeyShare : ""),
            [.text(user)])
        return try rows.map { row in
            guard row.count == 4, let token = row[0].string,
                let provider = row[1].string.flatMap(PushProvider.init(rawValue:))
            else { throw StoreError.corrupt("bad devices row") }
            var environment: APNsEnvironment?
            if let name = row[3].string {
                guard let value = APNsEnvironment(rawValue: name) else { throw StoreError.corrupt("bad environment") }
                environment = value
            }
            return RegisteredDevice(token: token, provider: provider, topic: row[2].string, environment: environment)
        }
        // Same order as InboxModel (Swift string order), independent of the database's collation.
        .sorted { $0.token < $1.token }
    }

    static func apply(
        _ events: [Event], policy: BadgePolicy, context: ApplyContext, database: any SQLTransactor,
        beforeEvent: (@Sendable (Int, any SQLExecutor) async throws -> Void)?
    ) async throws -> [AppliedEvent] {
        guard !events.isEmpty else { return [] }
        return try await database.transaction { sql in
            if let lease = context.lease { try await FleetQueries.checkLease(lease, sql: sql) }
            var rules = EventRules(
                sql: sql, policy: policy, partition: context.partition,
                maxDevicesPerUser: context.maxDevicesPerUser, beforeEvent: beforeEvent)
            return try await rules.apply(events)
        }
    }

    static func pendingPushes(
        limit: Int, partition: Int?, database: any SQLTransactor
    ) async throws -> [OutboxPush] {
        guard limit > 0 else { return [] }
        return try await database.transaction { sql in
            if let partition {
                return try await sql.query(
                    "SELECT \(OutboxRow.selectColumns) FROM outbox WHERE partition_id = $1 ORDER BY id LIMIT $2",
                    [.int(Int64(partition)), .int(Int64(limit))]
                ).map(OutboxRow.decode)
            }
            return try await sql.query(
                "SELECT \(OutboxRow.selectColumns) FROM outbox ORDER BY id LIMIT $1", [.int(Int64(limit))]
            ).map(OutboxRow.decode)
        }
    }

    /// Rows and the oldest `created_at` per partition, for `partitions` (empty ones included, with depth 0).
    static func outboxBacklog(partitions: [Int], database: any SQLTransactor) async throws -> [OutboxBacklog] {
        guard !partitions.isEmpty else { return [] }
        // Partition numbers are integers: written into the statement, not bound.
        let list = Set(partitions).sorted().map(String.init).joined(separator: ",")
        let rows = try await database.transaction { sql in
            try await sql.query(
                """
                SELECT partition_id, count(*), min(created_at) FROM outbox WHERE partition_id IN (\(list))
                GROUP BY partition_id
                """, [])
        }
        var found: [Int: OutboxBacklog] = [:]
        for row in rows {
            guard let partition = row[0].int64, let depth = row[1].int64 else {
                throw StoreError.corrupt("outbox backlog row \(row)")
            }
            found[Int(partition)] = OutboxBacklog(
                partition: Int(partition), depth: Int(depth), oldestCreatedAt: row[2].int64)
        }
        return Set(partitions).sorted().map {
            found[$0] ?? OutboxBacklog(partition: $0, depth: 0, oldestCreatedAt: nil)
        }
    }

    static func markSent(_ ids: [Int64], database: any SQLTransactor) async throws {
        guard !ids.isEmpty else { return }
        try await database.transaction { sql in try await FleetQueries.deleteOutboxRows(ids, sql: sql) }
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
            let state = try row.map { try EventRules.UserRow(cells: $0) } ?? EventRules.UserRow()
            return UserSnapshot(
                user: user, counts: state.counts, badgeVersion: state.badgeVersion, badgeEnabled: state.badgeEnabled,
                previews: state.previews, readAllUntil: state.readAllUntil.map(Timestamp.init(microsecondsSinceEpoch:)),
                openedUntil: state.openedUntil.map(Timestamp.init(microsecondsSinceEpoch:)),
                devices: try await activeDevices(of: user, sql: sql))
        }
    }
}
