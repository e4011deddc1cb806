import BadgeCore
import BadgeWire

extension EventRules {
    /// Locks the batch's users, records its event ids, and reads every row the batch can change, one statement
    /// per kind of row (see ``EventRules``).
    mutating func load(_ events: [Event]) async throws {
        try await lockUsers(Set(events.map(\.recipient)))
        try await recordEventIDs(Set(events.map(\.id)))
        // The events that take effect: the first of each fresh id.
        var pending = fresh
        let effective = events.filter { pending.remove($0.id) != nil }

        var notificationPairs = SQLRowSet([("user_id", .text), ("id", .text)])
        var seenPairs: Set<UserItem> = []
        var readAllUntil: [String: Int64] = [:]
        var openedUntil: [String: Int64] = [:]
        var messagePairs = SQLRowSet([("user_id", .text), ("id", .text)])
        var conversationPairs: Set<UserItem> = []
        var conversationReadUntil: [UserItem: Int64] = [:]
        var deviceTokens: Set<String> = []
        for event in effective {
            let until = event.effectiveUntil.microsecondsSinceEpoch
            switch event.type {
            case .follow, .amen, .comment, .mention, .followRequestAccepted, .messageRequestAccepted,
                .prayerReminder:
                if seenPairs.insert(UserItem(user: event.recipient, item: event.id)).inserted {
                    notificationPairs.append([.text(event.recipient), .text(event.id)])
                }
            case .notificationRead:
                for id in event.notificationIDs
                where seenPairs.insert(UserItem(user: event.recipient, item: id)).inserted {
                    notificationPairs.append([.text(event.recipient), .text(id)])
                }
            case .notificationsReadAll:
                readAllUntil[event.recipient] = max(readAllUntil[event.recipient] ?? until, until)
            case .notificationsOpened:
                openedUntil[event.recipient] = max(openedUntil[event.recipient] ?? until, until)
            case .message:
                messagePairs.append([.text(event.recipient), .text(event.id)])
                conversationPairs.insert(UserItem(user: event.recipient, item: event.conversationID ?? ""))
            case .conversationRead:
                let key = UserItem(user: event.recipient, item: event.conversationID ?? "")
                conversationPairs.insert(key)
                conversationReadUntil[key] = max(conversationReadUntil[key] ?? until, until)
            case .deviceRegistered, .deviceUnregistered:
                if let token = event.device?.token { deviceTokens.insert(token) }
            case .preferencesUpdated:
                break
            }
        }
        try await loadNotifications(pairs: notificationPairs, readAllUntil: readAllUntil, openedUntil: openedUntil)
        try await loadMessages(pairs: messagePairs, readUntil: conversationReadUntil)
        try await loadWatermarks(conversationPairs)
        try await loadDevices(users: Set(effective.map(\.recipient)), tokens: deviceTokens)
    }

    /// Creates the missing `users` rows and locks all of the batch's rows, in one order (user id) so that
    /// concurrent batches on PostgreSQL do not deadlock; loads them into memory. One statement, which with
    /// ``lease`` first checks and key-share-locks the lease (``FleetQueries/leaseQuery(_:first:)``): while the
    /// lease is not held it creates and locks nothing and returns no row, and the batch fails with `lease_lost`.
    private mutating func lockUsers(_ ids: Set<String>) async throws {
        var set = SQLRowSet([("user_id", .text)])
        for id in ids.sorted() { set.append([.text(id)]) }
        var binds = [set.bind]
        var prefix = ""
        var condition = "true"
        if let lease {
            let check = FleetQueries.leaseQuery(lease, first: 2)
            prefix = "WITH \(check.sql) "
            condition = "EXISTS (SELECT 1 FROM lease)"
            binds += check.binds
        }
        // One statement creates the missing rows and locks all of them: an upsert whose `DO UPDATE` (a no-op) locks
        // an existing row as `FOR UPDATE` would, in the order of the SELECT.
        let rows = try await sql.query(
            prefix + "INSERT INTO users (user_id) SELECT user_id FROM \(set.table("s", bind: 1, dialect: sql.dialect)) "
                + "WHERE \(condition) ORDER BY user_id ON CONFLICT (user_id) DO UPDATE SET user_id = excluded.user_id "
                + "RETURNING user_id, \(UserRow.columns)",
            binds)
        if let lease, rows.isEmpty, !ids.isEmpty { throw FleetQueries.leaseLost(lease) }
        for row in rows {
            guard let id = try row["user_id"].string else { throw StoreError.corrupt("users row without id") }
            let user = try UserRow(row: row)
            users[id] = user
            loadedUsers[id] = user
        }
        for id in ids where users[id] == nil {
            throw StoreError.corrupt("users row \(id) missing after insert")
        }
    }

    /// Records the batch's event ids as processed; those that were new form `fresh`. Inserted in sorted order
    /// so that concurrent batches wait for each other rather than deadlock.
    private mutating func recordEventIDs(_ ids: Set<String>) async throws {
        var set = SQLRowSet([("id", .text), ("at", .int)])
        for id in ids.sorted() { set.append([.text(id), .int(createdAt)]) }
        let rows = try await sql.query(
            "INSERT INTO processed_events (event_id, processed_at) SELECT id, at FROM "
                + "\(set.table("s", bind: 1, dialect: sql.dialect)) "
                + "WHERE true ORDER BY id ON CONFLICT (event_id) DO NOTHING RETURNING event_id",
            [set.bind])
        for row in rows {
            guard let id = try row["event_id"].string else { throw StoreError.corrupt("bad processed_events row") }
            fresh.insert(id)
        }
    }

    /// The notifications the batch names (new ones, ids of `notification_read`), whatever their state, with their
    /// read tombstones, and those its read-all and opened watermarks will change: unread ones up to the newest read-all, unread unseen ones up
    /// to the newest opened.
    private mutating func loadNotifications(
        pairs: SQLRowSet, readAllUntil: [String: Int64], openedUntil: [String: Int64]
    ) async throws {
        // One statement: the named notifications and their tombstones, and the rows the watermarks will change.
        var branches: [String] = []
        var binds: [SQLValue] = []
        let columns = "n.user_id, n.id, n.occurred_at, n.read, n.seen"
        if !pairs.isEmpty {
            binds.append(pairs.bind)
            let source = pairs.table("s", bind: binds.count, dialect: sql.dialect)
            branches.append(
                "SELECT 'n' AS kind, \(columns) FROM notifications n JOIN \(source) "
                    + "ON n.user_id = s.user_id AND n.id = s.id")
            branches.append(
                "SELECT 't' AS kind, t.user_id, t.notification_id AS id, NULL AS occurred_at, NULL AS read, "
                    + "NULL AS seen FROM read_tombstones t JOIN \(source) "
                    + "ON t.user_id = s.user_id AND t.notification_id = s.id")
        }
        if !readAllUntil.isEmpty || !openedUntil.isEmpty {
            var watermarks = SQLRowSet([("user_id", .text), ("read_all", .int), ("opened", .int)])
            for user in Set(readAllUntil.keys).union(openedUntil.keys).sorted() {
                watermarks.append([.text(user), .int(readAllUntil[user]), .int(openedUntil[user])])
            }
            binds.append(watermarks.bind)
            func each(_ condition: String) -> String {
                watermarks.joinEach(
                    "s", bind: binds.count, dialect: sql.dialect, table: "notifications", as: "n", columns: columns,
                    on: "n.user_id = s.user_id AND " + condition)
            }
            branches.append(
                "SELECT 'n' AS kind, \(columns) FROM \(each("NOT n.read AND n.occurred_at <= s.read_all"))")
            branches.append(
                "SELECT 'n' AS kind, \(columns) FROM "
                    + each("NOT n.read AND NOT n.seen AND n.occurred_at <= s.opened"))
        }
        guard !branches.isEmpty else { return }
        for row in try await sql.query(branches.joined(separator: " UNION ALL "), binds) {
            guard let kind = try row["kind"].string, let user = try row["user_id"].string, let id = try row["id"].string
            else {
                throw StoreError.corrupt("bad notifications row")
            }
            if kind == "t" {
                tombstones[user, default: []].insert(id)
                continue
            }
            guard let occurredAt = try row["occurred_at"].int64, let read = try row["read"].bool,
                let seen = try row["seen"].bool
            else {
                throw StoreError.corrupt("bad notifications row")
            }
            notifications[user, default: [:]][id] = NotificationRow(
                occurredAt: occurredAt, read: read, seen: seen, isNew: false)
        }
    }

    /// Which of the batch's messages are stored already, and the unread messages its `conversation_read`
    /// watermarks will turn read.
    private mutating func loadMessages(pairs: SQLRowSet, readUntil: [UserItem: Int64]) async throws {
        if !pairs.isEmpty {
            let rows = try await sql.query(
                "SELECT m.user_id, m.event_id FROM messages m JOIN \(pairs.table("s", bind: 1, dialect: sql.dialect)) "
                    + "ON m.user_id = s.user_id AND m.event_id = s.id",
                [pairs.bind])
            for row in rows {
                guard let user = try row["user_id"].string, let id = try row["event_id"].string else {
                    throw StoreError.corrupt("bad messages row")
                }
                storedMessages.insert(UserItem(user: user, item: id))
            }
        }
        guard !readUntil.isEmpty else { return }
        var conversations = SQLRowSet([("user_id", .text), ("conversation_id", .text), ("read_until", .int)])
        for (key, until) in readUntil { conversations.append([.text(key.user), .text(key.item), .int(until)]) }
        let columns = "m.user_id, m.conversation_id, m.event_id, m.occurred_at"
        let source = conversations.joinEach(
            "s", bind: 1, dialect: sql.dialect, table: "messages", as: "m", columns: columns,
            on: "m.user_id = s.user_id AND m.conversation_id = s.conversation_id AND NOT m.read "
                + "AND m.occurred_at <= s.read_until")
        let rows = try await sql.query("SELECT \(columns) FROM \(source)", [conversations.bind])
        for row in rows {
            guard let user = try row["user_id"].string, let conversation = try row["conversation_id"].string,
                let id = try row["event_id"].string, let occurredAt = try row["occurred_at"].int64
            else { throw StoreError.corrupt("bad messages row") }
            messages[UserItem(user: user, item: conversation), default: [:]][id] = MessageRow(
                occurredAt: occurredAt, read: false, isNew: false)
        }
    }

    private mutating func loadWatermarks(_ keys: Set<UserItem>) async throws {
        guard !keys.isEmpty else { return }
        var set = SQLRowSet([("user_id", .text), ("conversation_id", .text)])
        for key in keys { set.append([.text(key.user), .text(key.item)]) }
        let rows = try await sql.query(
            "SELECT w.user_id, w.conversation_id, w.read_until FROM conversation_watermarks w "
                + "JOIN \(set.table("s", bind: 1, dialect: sql.dialect)) "
                + "ON w.user_id = s.user_id AND w.conversation_id = s.conversation_id",
            [set.bind])
        for row in rows {
            guard let user = try row["user_id"].string, let conversation = try row["conversation_id"].string,
                let until = try row["read_until"].int64
            else { throw StoreError.corrupt("bad conversation_watermarks row") }
            watermarks[UserItem(user: user, item: conversation)] = until
        }
    }

    /// The active devices of the batch's users (key-share-locked on PostgreSQL, so a concurrent move of one of the
    /// tokens to another user, which locks the row for update, waits for this batch and its outbox rows precede the
    /// new owner's; the delivery stage's `pushed_version` updates take no-key-update locks and do not wait), and
    /// the rows of the tokens its device events name (locked for update).
    private mutating func loadDevices(users: Set<String>, tokens: Set<String>) async throws {
        let columns = "token, user_id, provider, topic, environment, active, registered_at"
        var rows: [SQLRow] = []
        if !tokens.isEmpty {
            var set = SQLRowSet([("token", .text)])
            for token in tokens.sorted() { set.append([.text(token)]) }
            rows += try await sql.query(
                "SELECT \(columns) FROM devices WHERE token IN (SELECT token FROM "
                    + "\(set.table("s", bind: 1, dialect: sql.dialect))) ORDER BY token" + sql.dialect.forUpdate,
                [set.bind])
        }
        if !users.isEmpty {
            var set = SQLRowSet([("user_id", .text)])
            for user in users.sorted() { set.append([.text(user)]) }
            rows += try await sql.query(
                "SELECT \(columns) FROM devices WHERE user_id IN (SELECT user_id FROM "
                    + "\(set.table("s", bind: 1, dialect: sql.dialect))) AND active ORDER BY token"
                    + sql.dialect.forKeyShare,
                [set.bind])
        }
        for row in rows {
            let device = try RegisteredDevice(row: row)
            guard let user = try row["user_id"].string, let active = try row["active"].bool,
                let registeredAt = try row["registered_at"].int64
            else { throw StoreError.corrupt("bad devices row") }
            let token = device.token
            guard devices[token] == nil else { continue }
            devices[token] = DeviceRow(
                user: user, device: device, active: active, registeredAt: registeredAt, stored: true)
            if active { tokensByUser[user, default: []].insert(token) }
        }
    }
}
