import BadgeCore
import BadgeWire

extension EventRules {
    /// Locks the batch's users, records its event ids, and reads every row the batch can change, one part per
    /// kind of row, all in one ``SQLReadBatch`` (one statement on PostgreSQL; see ``EventRules``).
    ///
    /// The rows are read for every event of the batch, duplicates included (which of its ids are new is only
    /// known from the same statement): a duplicate only makes the batch read rows that it then leaves unchanged.
    ///
    /// A statement's snapshot is taken before it waits for a row lock, so reads in the statement that locks the
    /// users would miss what a writer it waited for committed. Under ``leases`` no other batch writes these users'
    /// rows (the fence keeps earlier owners out, and the delivery stage changes only `users` rows, which the lock
    /// itself returns fresh): the reads join the lock's statement. Without one (two stores writing one user's rows
    /// at once), they are a second statement, run once the locks are held.
    mutating func load(_ events: [Event]) async throws {
        var batch = SQLReadBatch()
        if !leases.isEmpty {
            let leases = leases
            batch.setPrelude { FleetQueries.leaseQuery(leases, binds: &$0) }
        }
        let userIDs = Set(events.map(\.recipient))
        let usersPart = addLockUsers(userIDs, to: &batch)
        let idsPart = addRecordEventIDs(Set(events.map(\.id)), to: &batch)
        if leases.isEmpty { batch.startSecondStatement() }

        var notificationPairs = SQLRowSet([("user_id", .text), ("id", .text)])
        var seenPairs: Set<UserItem> = []
        var readAllUntil: [String: Int64] = [:]
        var openedUntil: [String: Int64] = [:]
        var messagePairs = SQLRowSet([("user_id", .text), ("id", .text)])
        var seenMessages: Set<UserItem> = []
        var conversationPairs: Set<UserItem> = []
        var conversationReadUntil: [UserItem: Int64] = [:]
        var deviceTokens: Set<String> = []
        for event in events {
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
                if seenMessages.insert(UserItem(user: event.recipient, item: event.id)).inserted {
                    messagePairs.append([.text(event.recipient), .text(event.id)])
                }
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
        let notificationsPart = addNotifications(
            pairs: notificationPairs, readAllUntil: readAllUntil, openedUntil: openedUntil, to: &batch)
        let storedMessagesPart = addStoredMessages(pairs: messagePairs, to: &batch)
        let unreadMessagesPart = addUnreadMessages(readUntil: conversationReadUntil, to: &batch)
        let watermarksPart = addWatermarks(conversationPairs, to: &batch)
        let tokensPart = addDevices(tokens: deviceTokens, to: &batch)
        let userDevicesPart = addDevices(users: userIDs, to: &batch)

        let results = try await batch.run(sql: sql)
        try readUsers(results[usersPart], ids: userIDs)
        try readEventIDs(results[idsPart])
        if let notificationsPart { try readNotifications(results[notificationsPart]) }
        if let storedMessagesPart { try readStoredMessages(results[storedMessagesPart]) }
        if let unreadMessagesPart { try readUnreadMessages(results[unreadMessagesPart]) }
        if let watermarksPart { try readWatermarks(results[watermarksPart]) }
        // The tokens the device events name first (locked for update), then the users' other active devices.
        if let tokensPart { try readDevices(results[tokensPart]) }
        if let userDevicesPart { try readDevices(results[userDevicesPart]) }
        try checkReadStateRows(events)
    }

    /// Keeps the last row read in chunk order (where a chunked event's next chunk goes on).
    private mutating func noteRead(_ row: ReadStateCursor) {
        guard chunked else { return }
        if let last = lastRead, (last.occurredAt, last.id) >= (row.occurredAt, row.id) { return }
        lastRead = row
    }

    /// With ``readStateChunk``: a fresh read-state event whose watermark reached the bound fails the batch (before
    /// anything is written) with `read_state_too_large` naming the first such event, or, in a chunked batch, makes
    /// this chunk unfinished (``unfinishedChunk``).
    private mutating func checkReadStateRows(_ events: [Event]) throws {
        guard let limit = readStateChunk, readStateRows.values.contains(where: { $0 >= limit }) else { return }
        let heavy = events.first { event in
            fresh.contains(event.id) && ReadStateKey(event).map { (readStateRows[$0] ?? 0) >= limit } ?? false
        }
        guard let heavy else { return }
        if chunked {
            unfinishedChunk = true
            return
        }
        throw StoreError(
            code: .readStateTooLarge,
            message: "\(heavy.type.rawValue) \(heavy.id) changes more than \(limit) rows: applied in chunks",
            failure: .other, subject: heavy.id)
    }

    /// The part that creates the missing `users` rows and locks all of the batch's rows, in one order (user id) so
    /// that concurrent batches on PostgreSQL do not deadlock: an upsert whose `DO UPDATE` (a no-op) locks an
    /// existing row as `FOR UPDATE` would, in the order of the SELECT. With ``leases`` it reads the prelude's lease
    /// check (``FleetQueries/leaseQuery(_:binds:)``), which the statement evaluates before it locks anything: while
    /// one of them is not held it creates and locks nothing and returns no row, and the batch fails with
    /// `lease_lost` (see ``readUsers(_:ids:)``).
    private func addLockUsers(_ ids: Set<String>, to batch: inout SQLReadBatch) -> Int {
        var set = SQLRowSet([("user_id", .text)])
        for id in ids.sorted() { set.append([.text(id)]) }
        let (dialect, condition) = (sql.dialect, leaseCondition)
        return batch.add(
            columns: [
                ("user_id", .text), ("unread_notifications", .int), ("unseen_notifications", .int),
                ("unread_messages", .int), ("badge_version", .int), ("badge_enabled", .bool), ("previews", .bool),
                ("read_all_until", .int), ("opened_until", .int),
            ]
        ) { binds in
            "INSERT INTO users (user_id) SELECT user_id FROM \(set.table("s", binds: &binds, dialect: dialect)) "
                + "WHERE \(condition) ORDER BY user_id ON CONFLICT (user_id) DO UPDATE SET user_id = excluded.user_id "
                + "RETURNING user_id, \(UserRow.columns)"
        }
    }

    /// What the lock and the id record run under: the prelude's lease check, when there is one.
    private var leaseCondition: String { FleetQueries.leaseCondition(count: leases.count) }

    private mutating func readUsers(_ rows: [SQLRow], ids: Set<String>) throws {
        if !leases.isEmpty, rows.isEmpty, !ids.isEmpty { throw FleetQueries.leaseLost(leases) }
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

    /// The part that records the batch's event ids as processed, returning those that were new (``fresh``).
    /// Inserted in sorted order so that concurrent batches wait for each other rather than deadlock.
    private func addRecordEventIDs(_ ids: Set<String>, to batch: inout SQLReadBatch) -> Int {
        var set = SQLRowSet([("id", .text)])
        for id in ids.sorted() { set.append([.text(id)]) }
        let (condition, now) = (leaseCondition, FleetQueries.statementNow(sql.dialect))
        let dialect = sql.dialect
        return batch.add(columns: [("event_id", .text)]) { binds in
            "INSERT INTO processed_events (event_id, processed_at) SELECT id, \(now) FROM "
                + "\(set.table("s", binds: &binds, dialect: dialect)) "
                + "WHERE \(condition) ORDER BY id ON CONFLICT (event_id) DO NOTHING RETURNING event_id"
        }
    }

    private mutating func readEventIDs(_ rows: [SQLRow]) throws {
        for row in rows {
            guard let id = try row["event_id"].string else { throw StoreError.corrupt("bad processed_events row") }
            fresh.insert(id)
        }
    }

    /// The part reading the notifications the batch names (new ones, ids of `notification_read`), whatever their
    /// state, with their read tombstones, and those its read-all and opened watermarks will change: unread ones up
    /// to the newest read-all, unread unseen ones up to the newest opened.
    private func addNotifications(
        pairs: SQLRowSet, readAllUntil: [String: Int64], openedUntil: [String: Int64], to batch: inout SQLReadBatch
    ) -> Int? {
        var watermarks = SQLRowSet([
            ("user_id", .text), ("read_all", .int), ("opened", .int), ("after_at", .int), ("after_id", .text),
        ])
        for user in Set(readAllUntil.keys).union(openedUntil.keys).sorted() {
            watermarks.append([
                .text(user), .int(readAllUntil[user]), .int(openedUntil[user]), .int(resumeAfter.occurredAt),
                .text(resumeAfter.id),
            ])
        }
        guard !pairs.isEmpty || !watermarks.isEmpty else { return nil }
        let dialect = sql.dialect
        return batch.add(
            columns: [
                ("kind", .text), ("user_id", .text), ("id", .text), ("occurred_at", .int), ("read", .bool),
                ("seen", .bool),
            ]
        ) { binds in
            var branches: [String] = []
            let columns = "n.user_id, n.id, n.occurred_at, n.read, n.seen"
            if !pairs.isEmpty {
                let source = pairs.table("s", binds: &binds, dialect: dialect)
                branches.append(
                    "SELECT 'n' AS kind, \(columns) FROM notifications n JOIN \(source) "
                        + "ON n.user_id = s.user_id AND n.id = s.id")
                branches.append(
                    "SELECT 't' AS kind, t.user_id, t.notification_id AS id, NULL AS occurred_at, NULL AS read, "
                        + "NULL AS seen FROM read_tombstones t JOIN \(source) "
                        + "ON t.user_id = s.user_id AND t.notification_id = s.id")
            }
            if !watermarks.isEmpty {
                // Bounded (``readStateChunk``): the oldest rows first, one more than a chunk tells "more".
                let limit = readStateChunk.map {
                    SQLRowLimit(count: $0, orderBy: "n.occurred_at, n.id", per: "s.user_id")
                }
                // Only rows after where the previous chunk of a chunked event stopped (all of them otherwise).
                // Both branches read the watermarks from one bind.
                let rows = binds.add(watermarks.bind)
                let after =
                    " AND n.occurred_at >= s.after_at AND (n.occurred_at > s.after_at OR n.id > s.after_id)"
                func each(_ condition: String) -> String {
                    watermarks.joinEach(
                        "s", reading: rows, dialect: dialect, table: "notifications", as: "n", columns: columns,
                        on: "n.user_id = s.user_id AND " + condition + after, limit: limit)
                }
                branches.append(
                    "SELECT 'r' AS kind, \(columns) FROM \(each("NOT n.read AND n.occurred_at <= s.read_all"))")
                branches.append(
                    "SELECT 'o' AS kind, \(columns) FROM "
                        + each("NOT n.read AND NOT n.seen AND n.occurred_at <= s.opened"))
            }
            return branches.joined(separator: " UNION ALL ")
        }
    }

    private mutating func readNotifications(_ rows: [SQLRow]) throws {
        for row in rows {
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
            switch kind {
            case "r": readStateRows[.readAll(user), default: 0] += 1
            case "o": readStateRows[.opened(user), default: 0] += 1
            default: continue
            }
            noteRead(ReadStateCursor(occurredAt: occurredAt, id: id))
        }
    }

    /// The part reading which of the batch's messages are stored already.
    private func addStoredMessages(pairs: SQLRowSet, to batch: inout SQLReadBatch) -> Int? {
        guard !pairs.isEmpty else { return nil }
        let dialect = sql.dialect
        return batch.add(columns: [("user_id", .text), ("event_id", .text)]) { binds in
            "SELECT m.user_id, m.event_id FROM messages m JOIN \(pairs.table("s", binds: &binds, dialect: dialect)) "
                + "ON m.user_id = s.user_id AND m.event_id = s.id"
        }
    }

    private mutating func readStoredMessages(_ rows: [SQLRow]) throws {
        for row in rows {
            guard let user = try row["user_id"].string, let id = try row["event_id"].string else {
                throw StoreError.corrupt("bad messages row")
            }
            storedMessages.insert(UserItem(user: user, item: id))
        }
    }

    /// The part reading the unread messages the batch's `conversation_read` watermarks will turn read.
    private func addUnreadMessages(readUntil: [UserItem: Int64], to batch: inout SQLReadBatch) -> Int? {
        guard !readUntil.isEmpty else { return nil }
        var conversations = SQLRowSet([
            ("user_id", .text), ("conversation_id", .text), ("read_until", .int), ("after_at", .int),
            ("after_id", .text),
        ])
        for (key, until) in readUntil {
            conversations.append([
                .text(key.user), .text(key.item), .int(until), .int(resumeAfter.occurredAt), .text(resumeAfter.id),
            ])
        }
        let dialect = sql.dialect
        return batch.add(
            columns: [("user_id", .text), ("conversation_id", .text), ("event_id", .text), ("occurred_at", .int)]
        ) { binds in
            let columns = "m.user_id, m.conversation_id, m.event_id, m.occurred_at"
            let source = conversations.joinEach(
                "s", reading: binds.add(conversations.bind), dialect: dialect, table: "messages", as: "m",
                columns: columns,
                on: "m.user_id = s.user_id AND m.conversation_id = s.conversation_id AND NOT m.read "
                    + "AND m.occurred_at <= s.read_until AND m.occurred_at >= s.after_at "
                    + "AND (m.occurred_at > s.after_at OR m.event_id > s.after_id)",
                limit: readStateChunk.map {
                    SQLRowLimit(
                        count: $0, orderBy: "m.occurred_at, m.event_id", per: "s.user_id, s.conversation_id")
                })
            return "SELECT \(columns) FROM \(source)"
        }
    }

    private mutating func readUnreadMessages(_ rows: [SQLRow]) throws {
        for row in rows {
            guard let user = try row["user_id"].string, let conversation = try row["conversation_id"].string,
                let id = try row["event_id"].string, let occurredAt = try row["occurred_at"].int64
            else { throw StoreError.corrupt("bad messages row") }
            let key = UserItem(user: user, item: conversation)
            messages[key, default: [:]][id] = MessageRow(occurredAt: occurredAt, read: false, isNew: false)
            readStateRows[.conversation(key), default: 0] += 1
            noteRead(ReadStateCursor(occurredAt: occurredAt, id: id))
        }
    }

    private func addWatermarks(_ keys: Set<UserItem>, to batch: inout SQLReadBatch) -> Int? {
        guard !keys.isEmpty else { return nil }
        var set = SQLRowSet([("user_id", .text), ("conversation_id", .text)])
        for key in keys { set.append([.text(key.user), .text(key.item)]) }
        let dialect = sql.dialect
        return batch.add(
            columns: [("user_id", .text), ("conversation_id", .text), ("read_until", .int)]
        ) { binds in
            "SELECT w.user_id, w.conversation_id, w.read_until FROM conversation_watermarks w "
                + "JOIN \(set.table("s", binds: &binds, dialect: dialect)) "
                + "ON w.user_id = s.user_id AND w.conversation_id = s.conversation_id"
        }
    }

    private mutating func readWatermarks(_ rows: [SQLRow]) throws {
        for row in rows {
            guard let user = try row["user_id"].string, let conversation = try row["conversation_id"].string,
                let until = try row["read_until"].int64
            else { throw StoreError.corrupt("bad conversation_watermarks row") }
            watermarks[UserItem(user: user, item: conversation)] = until
        }
    }

    /// The columns of a devices part.
    private static let deviceColumns: [(name: String, type: SQLRowSet.ColumnType)] = [
        ("token", .text), ("user_id", .text), ("provider", .text), ("topic", .text), ("environment", .text),
        ("active", .bool), ("registered_at", .int), ("unregistered_at", .int), ("app", .text),
    ]

    /// The part reading the rows of the tokens the batch's device events name, locked for update.
    private func addDevices(tokens: Set<String>, to batch: inout SQLReadBatch) -> Int? {
        addDevices(where: "token", in: tokens, filter: "", lock: sql.dialect.forUpdate, to: &batch)
    }

    /// The part reading the active devices of the batch's users, key-share-locked on PostgreSQL, so a concurrent
    /// move of one of the tokens to another user, which locks the row for update, waits for this batch and its
    /// outbox rows precede the new owner's (the delivery stage's `pushed_version` updates take no-key-update locks
    /// and do not wait).
    private func addDevices(users: Set<String>, to batch: inout SQLReadBatch) -> Int? {
        addDevices(where: "user_id", in: users, filter: " AND active", lock: sql.dialect.forKeyShare, to: &batch)
    }

    /// A part reading the devices whose `column` is one of `values` (and `filter`), in token order, with `lock`.
    private func addDevices(
        where column: String, in values: Set<String>, filter: String, lock: String, to batch: inout SQLReadBatch
    ) -> Int? {
        guard !values.isEmpty else { return nil }
        var set = SQLRowSet([(column, .text)])
        for value in values.sorted() { set.append([.text(value)]) }
        let dialect = sql.dialect
        return batch.add(columns: Self.deviceColumns) { binds in
            let values = "SELECT \(column) FROM \(set.table("s", binds: &binds, dialect: dialect))"
            // On PostgreSQL `= ANY(ARRAY(…))`, an index condition whatever the statistics say. With `IN (SELECT …)`
            // a generic plan made while `devices` is nearly empty (the first batches) hash-joins the whole
            // `devices_active_user` index, however few users the batch has.
            let condition = dialect.among(column, values)
            return "SELECT \(Self.deviceColumns.map(\.name).joined(separator: ", ")) FROM devices WHERE \(condition)"
                + "\(filter) ORDER BY token\(lock)"
        }
    }

    private mutating func readDevices(_ rows: [SQLRow]) throws {
        for row in rows {
            let device = try RegisteredDevice(row: row)
            guard let user = try row["user_id"].string, let active = try row["active"].bool,
                let registeredAt = try row["registered_at"].int64
            else { throw StoreError.corrupt("bad devices row") }
            let token = device.token
            guard devices[token] == nil else { continue }
            devices[token] = DeviceRow(
                user: user, device: device, active: active, registeredAt: registeredAt, stored: true,
                unregisteredAt: try row["unregistered_at"].int64)
            if active { tokensByUser[user, default: []].insert(token) }
        }
    }
}
