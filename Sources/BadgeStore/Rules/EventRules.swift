import BadgeCore
import BadgeSupport
import BadgeWire

/// The contract's count rules, applied to the database through an ``SQLExecutor``; the tests check them against
/// the reference model (`InboxModel` in `Tests/BadgeModel`).
///
/// Written once for both backends, set-based: a batch costs a constant number of statements whatever its size.
/// 1. **Load** (``load(_:)``): record the batch's event ids, create and lock its users' rows (in user-id order, so
///    concurrent batches wait for each other instead of deadlocking), and read, one part per kind, exactly the
///    rows the batch can change: the notifications and messages its read-state events would turn read or seen,
///    the tombstones, watermarks and devices it touches. All parts are one ``SQLReadBatch``: one statement on
///    PostgreSQL.
/// 2. **Apply** in memory, event by event, in order: the same rules as the model, so each push carries the counts
///    and `badge_version` right after its event.
/// 3. **Write** (``write()``): one statement per table for everything that changed, and the outbox in planning
///    order.
///
/// Every loaded row changes state in the batch (a notification changes state at most twice in its life), so the
/// cost of an event does not grow with the number of stored or unread notifications. The counters live in the
/// `users` row and are maintained, never recounted.
struct EventRules {
    let sql: any SQLExecutor
    let policy: BadgePolicy
    /// The partition queue the batch came from, recorded on its outbox rows.
    let partition: Int?
    /// See ``ApplyContext/maxDevicesPerUser``.
    let maxDevicesPerUser: Int
    /// Runs before each event with its index in the batch (a test hook for injecting failures).
    let beforeEvent: (@Sendable (Int, any SQLExecutor) async throws -> Void)?
    /// On PostgreSQL, the leases the batch is applied under (one per partition it covers): checked by the batch's
    /// first statement (see `lockUsers`) rather than by one of its own. Empty when the caller checked them
    /// (SQLite) or there are none.
    let leases: [PartitionLease]
    /// The partition of each event when the batch covers several (see ``StoreQueries/apply(_:policy:database:beforeEvent:)``);
    /// empty when every event is of ``partition``.
    var eventPartitions: [Int?] = []
    /// The partition of each push in ``planned``, recorded on its outbox row.
    var plannedPartitions: [Int?] = []
    /// See ``ApplyContext/readStateChunk``.
    var readStateChunk: Int?
    /// See ``ApplyContext/chunked``: the batch is one read-state event, applied chunk by chunk.
    var chunked = false
    /// In a chunked batch, whether this chunk is not the event's last (set by ``load(_:)``).
    var unfinishedChunk = false
    /// Rows the read-state parts of ``load(_:)`` returned, per watermark (user, or user and conversation), to
    /// compare with ``readStateChunk``.
    var readStateRows: [ReadStateKey: Int] = [:]
    /// In a chunked batch: where the previous chunk stopped (see ``ApplyContext/resumeAfter``), and the last row
    /// this one read.
    var resumeAfter = ReadStateCursor.start
    var lastRead: ReadStateCursor?

    var users: [String: UserRow] = [:]
    var loadedUsers: [String: UserRow] = [:]
    /// Event ids of the batch that were not processed before; an id leaves the set at its first use.
    var fresh: Set<String> = []
    /// Per user, the notifications loaded or stored by the batch, by id. An id absent here is not stored, or
    /// stored in a state the batch cannot change (see ``load(_:)``).
    var notifications: [String: [String: NotificationRow]] = [:]
    /// Per user, the read tombstones of the batch's notification ids: loaded, or added by the batch.
    var tombstones: [String: Set<String>] = [:]
    var tombstonesAdded: Set<UserItem> = []
    var tombstonesRemoved: Set<UserItem> = []
    var messages: [UserItem: [String: MessageRow]] = [:]
    /// Message ids (per user) already stored before the batch.
    var storedMessages: Set<UserItem> = []
    var watermarks: [UserItem: Int64] = [:]
    var changedWatermarks: Set<UserItem> = []
    var devices: [String: DeviceRow] = [:]
    /// Active tokens per user.
    var tokensByUser: [String: Set<String>] = [:]
    /// The batch's pushes in planning order, written to the outbox at the end of the batch.
    var planned: [PlannedPush] = []
    /// The serialised event of each alert in `planned`, by event id.
    var eventJSON: [String: String] = [:]

    init(
        sql: any SQLExecutor, policy: BadgePolicy, partition: Int? = nil,
        maxDevicesPerUser: Int = ApplyContext.defaultMaxDevicesPerUser,
        beforeEvent: (@Sendable (Int, any SQLExecutor) async throws -> Void)? = nil, leases: [PartitionLease] = []
    ) {
        self.sql = sql
        self.leases = leases
        self.policy = policy
        self.partition = partition
        self.maxDevicesPerUser = maxDevicesPerUser
        self.beforeEvent = beforeEvent
    }

    // MARK: - Batch

    /// Applies `events` in order; the caller owns the transaction.
    mutating func apply(_ events: [Event]) async throws -> [AppliedEvent] {
        try await load(events)
        // Per event: whether it is a duplicate and the range of its pushes in `planned`.
        var outcomes: [(duplicate: Bool, pushes: Range<Int>)] = []
        outcomes.reserveCapacity(events.count)
        for (index, event) in events.enumerated() {
            if let beforeEvent { try await beforeEvent(index, sql) }
            let start = planned.count
            let duplicate = try apply(event)
            let eventPartition = eventPartitions.isEmpty ? partition : eventPartitions[index]
            plannedPartitions.append(contentsOf: repeatElement(eventPartition, count: planned.count - start))
            outcomes.append((duplicate, start..<planned.count))
        }
        let rows = try await write()
        if unfinishedChunk, let event = events.first {
            // Not processed yet: the event's next chunk must find it fresh.
            var binds = SQLBinds()
            let statement = "DELETE FROM processed_events WHERE event_id = \(binds.add(.text(event.id)))"
            try await sql.execute(statement, binds.values)
        }
        return zip(events, outcomes).map { event, outcome in
            AppliedEvent(
                event: event, duplicate: outcome.duplicate,
                pushes: outcome.pushes.map { index in
                    OutboxPush(
                        id: rows[index].id, push: planned[index], createdAt: rows[index].createdAt)
                }, unfinished: unfinishedChunk, resumeAfter: unfinishedChunk ? lastRead : nil)
        }
    }
}

extension EventRules {
    /// The `users` row of one user, held in memory for the whole batch (the row is locked).
    struct UserRow: Equatable {
        var unreadNotifications: Int64 = 0
        var unseenNotifications: Int64 = 0
        var unreadMessages: Int64 = 0
        var badgeVersion: Int64 = 0
        var badgeEnabled = true
        var previews = true
        var readAllUntil: Int64?
        var openedUntil: Int64?

        var counts: Counts {
            Counts(
                unreadNotifications: Int(unreadNotifications), unseenNotifications: Int(unseenNotifications),
                unreadMessages: Int(unreadMessages))
        }

        static let columns =
            "unread_notifications, unseen_notifications, unread_messages, badge_version, badge_enabled, previews, "
            + "read_all_until, opened_until"

        /// Reads the row from the columns named in ``columns``.
        init(row: SQLRow) throws {
            guard let unreadNotifications = try row["unread_notifications"].int64,
                let unseenNotifications = try row["unseen_notifications"].int64,
                let unreadMessages = try row["unread_messages"].int64,
                let badgeVersion = try row["badge_version"].int64,
                let badgeEnabled = try row["badge_enabled"].bool, let previews = try row["previews"].bool
            else { throw StoreError.corrupt("bad users row") }
            self.unreadNotifications = unreadNotifications
            self.unseenNotifications = unseenNotifications
            self.unreadMessages = unreadMessages
            self.badgeVersion = badgeVersion
            self.badgeEnabled = badgeEnabled
            self.previews = previews
            self.readAllUntil = try row["read_all_until"].int64
            self.openedUntil = try row["opened_until"].int64
        }

        init() {}

        /// `push` with this user's counts, badge (under `policy`), `badge_version` and preferences: what a rebuilt
        /// alert or a badge refresh carries.
        func current(_ push: PlannedPush, policy: BadgePolicy) -> PlannedPush {
            var current = push
            current.counts = counts
            current.badge = policy.badge(for: counts, badgeEnabled: badgeEnabled)
            current.badgeVersion = badgeVersion
            current.previews = previews
            return current
        }
    }

    /// A notification the batch may change, or one it stores.
    struct NotificationRow {
        var occurredAt: Int64
        var read: Bool
        var seen: Bool
        /// Stored by this batch (inserted at the end), rather than loaded.
        var isNew: Bool
        /// A loaded row whose state this batch changed.
        var changed = false
        /// For a new row, its event's JSON, stored for the app's list (`AppReads`).
        var eventJSON: String?
    }

    /// A message the batch may turn read, or one it stores.
    struct MessageRow {
        var occurredAt: Int64
        var read: Bool
        var isNew: Bool
        var changed = false
    }

    /// A device row as the batch sees it.
    struct DeviceRow {
        var user: String
        var device: RegisteredDevice
        var active: Bool
        /// When it was last registered (the registration's `occurred_at`, microseconds).
        var registeredAt: Int64
        /// The row exists in the database (loaded, and locked on PostgreSQL).
        var stored: Bool
        /// When the provider says the token died (APNs's 410 timestamp, microseconds), if it said: a registration
        /// that occurred before it does not reactivate the token.
        var unregisteredAt: Int64? = nil
        /// The token moved from one user to another in this batch: its `pushed_version` starts again.
        var moved = false
        /// Changed by this batch: written at the end.
        var touched = false
    }

    /// Something of one user: a conversation, a notification id, a message id.
    struct UserItem: Hashable {
        var user: String
        var item: String
    }

    /// The rows one read-state watermark of a batch changes: a user's read-all or opened, or one conversation's read.
    enum ReadStateKey: Hashable {
        case readAll(String)
        case opened(String)
        case conversation(UserItem)

        /// The watermark `event` moves, if it is a read-state event that changes rows in bulk.
        init?(_ event: Event) {
            switch event.type {
            case .notificationsReadAll: self = .readAll(event.recipient)
            case .notificationsOpened: self = .opened(event.recipient)
            case .conversationRead:
                self = .conversation(UserItem(user: event.recipient, item: event.conversationID ?? ""))
            default: return nil
            }
        }
    }
}

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

extension EventRules {
    /// Applies one event in memory; returns whether it was a duplicate.
    mutating func apply(_ event: Event) throws -> Bool {
        guard fresh.remove(event.id) != nil else { return true }
        guard var user = users[event.recipient] else { throw StoreError.corrupt("user \(event.recipient) not locked") }
        switch event.type {
        case .follow, .amen, .comment, .mention, .followRequestAccepted, .messageRequestAccepted,
            .prayerReminder:
            applyNotification(event, to: &user)
        case .message:
            applyMessage(event, to: &user)
        case .conversationRead, .notificationRead, .notificationsReadAll, .notificationsOpened,
            .preferencesUpdated:
            applyBadgeUpdate(event, to: &user)
        case .deviceRegistered:
            applyDeviceRegistered(event, user: user)
        case .deviceUnregistered:
            // Kept, inactive: its `pushed_version` still guards pushes planned before (a fleet may send one of
            // those later, after a takeover), so the device never gets an older version after a newer one.
            if let token = event.device?.token, var row = devices[token], row.user == event.recipient {
                row.active = false
                row.touched = true
                devices[token] = row
                tokensByUser[event.recipient]?.remove(token)
            }
        }
        users[event.recipient] = user
        return false
    }

    private mutating func applyNotification(_ event: Event, to user: inout UserRow) {
        guard !event.isSelfAction else { return }
        let occurredAt = event.occurredAt.microsecondsSinceEpoch
        let key = UserItem(user: event.recipient, item: event.id)
        let tombstoned = tombstones[event.recipient]?.remove(event.id) != nil
        if tombstoned {
            if tombstonesAdded.remove(key) == nil { tombstonesRemoved.insert(key) }
        }
        let read = tombstoned || (user.readAllUntil.map { occurredAt <= $0 } ?? false)
        let seen = user.openedUntil.map { occurredAt <= $0 } ?? false
        guard notifications[event.recipient]?[event.id] == nil else { return }
        // Encoded once, for the app's list and for the alerts' outbox rows alike (the list keeps a preview of a
        // long event: see `listedJSON`).
        let json = String(decoding: event.jsonData(), as: UTF8.self)
        notifications[event.recipient, default: [:]][event.id] = NotificationRow(
            occurredAt: occurredAt, read: read, seen: seen, isNew: true, eventJSON: Self.listedJSON(event, json: json))
        guard !read else { return }
        user.unreadNotifications += 1
        if !seen { user.unseenNotifications += 1 }
        user.badgeVersion += 1
        planPushes(.alert(event), for: event, user: user, json: json)
    }

    /// The most UTF-8 bytes of an event's JSON the app's list keeps as it is.
    static let listedJSONLimit = 2_048
    /// The most characters of a long event's `text` and `title` the list keeps.
    static let listedTextLimit = 1_000

    /// What a notification keeps of its event for the app's list: its JSON, or, for an event over
    /// ``listedJSONLimit`` bytes (a comment of 40 KB), the same with `text` and `title` cut to ``listedTextLimit``
    /// characters: the list shows a preview, and a batch of such events would otherwise carry each one twice (the
    /// outbox keeps it whole for the push).
    static func listedJSON(_ event: Event, json: String) -> String {
        guard json.utf8.count > listedJSONLimit else { return json }
        var preview = event
        preview.text = event.text.map { String($0.prefix(listedTextLimit)) }
        preview.title = event.title.map { String($0.prefix(listedTextLimit)) }
        return String(decoding: preview.jsonData(), as: UTF8.self)
    }

    private mutating func applyMessage(_ event: Event, to user: inout UserRow) {
        guard !event.isSelfAction else { return }
        let occurredAt = event.occurredAt.microsecondsSinceEpoch
        let conversation = UserItem(user: event.recipient, item: event.conversationID ?? "")
        let read = watermarks[conversation].map { occurredAt <= $0 } ?? false
        let id = UserItem(user: event.recipient, item: event.id)
        guard !storedMessages.contains(id), messages[conversation]?[event.id] == nil else { return }
        messages[conversation, default: [:]][event.id] = MessageRow(occurredAt: occurredAt, read: read, isNew: true)
        guard !read else { return }
        user.unreadMessages += 1
        user.badgeVersion += 1
        planPushes(.alert(event), for: event, user: user)
    }

    private mutating func applyBadgeUpdate(_ event: Event, to user: inout UserRow) {
        let before = user
        let recipient = event.recipient
        let until = event.effectiveUntil.microsecondsSinceEpoch

        switch event.type {
        case .conversationRead:
            let conversation = UserItem(user: recipient, item: event.conversationID ?? "")
            if watermarks[conversation].map({ $0 < until }) ?? true {
                watermarks[conversation] = until
                changedWatermarks.insert(conversation)
            }
            if var rows = messages[conversation] {
                for (id, row) in rows where !row.read && row.occurredAt <= until {
                    rows[id]?.read = true
                    if !row.isNew { rows[id]?.changed = true }
                    user.unreadMessages -= 1
                }
                messages[conversation] = rows
            }
        case .notificationRead:
            for id in event.notificationIDs {
                if let row = notifications[recipient]?[id] {
                    guard !row.read else { continue }
                    notifications[recipient]?[id]?.read = true
                    if !row.isNew { notifications[recipient]?[id]?.changed = true }
                    user.unreadNotifications -= 1
                    if !row.seen { user.unseenNotifications -= 1 }
                } else if !(tombstones[recipient]?.contains(id) ?? false) {
                    // Not stored yet: remember it for when it arrives.
                    tombstones[recipient, default: []].insert(id)
                    let key = UserItem(user: recipient, item: id)
                    if tombstonesRemoved.remove(key) == nil { tombstonesAdded.insert(key) }
                }
            }
        case .notificationsReadAll:
            user.readAllUntil = max(user.readAllUntil ?? until, until)
            if var rows = notifications[recipient] {
                for (id, row) in rows where !row.read && row.occurredAt <= until {
                    rows[id]?.read = true
                    if !row.isNew { rows[id]?.changed = true }
                    user.unreadNotifications -= 1
                    if !row.seen { user.unseenNotifications -= 1 }
                }
                notifications[recipient] = rows
            }
        case .notificationsOpened:
            user.openedUntil = max(user.openedUntil ?? until, until)
            if var rows = notifications[recipient] {
                for (id, row) in rows where !row.read && !row.seen && row.occurredAt <= until {
                    rows[id]?.seen = true
                    if !row.isNew { rows[id]?.changed = true }
                    user.unseenNotifications -= 1
                }
                notifications[recipient] = rows
            }
        case .preferencesUpdated:
            if let badgeEnabled = event.preferences?.badgeEnabled { user.badgeEnabled = badgeEnabled }
            if let previews = event.preferences?.previews { user.previews = previews }
        default:
            break
        }

        let changed = user.counts != before.counts || user.badgeEnabled != before.badgeEnabled
        if changed { user.badgeVersion += 1 }
        // An event applied in chunks pushes once, with its last chunk, and then always: its earlier chunks changed
        // the counts (and the version) without a push.
        if unfinishedChunk { return }
        guard changed || chunked else { return }
        planPushes(.badgeOnly, for: event, user: user)
    }

    private mutating func applyDeviceRegistered(_ event: Event, user: UserRow) {
        guard let info = event.device, let provider = info.provider else { return }
        let device = RegisteredDevice(
            token: info.token, provider: provider, topic: info.topic, environment: info.environment, app: info.app)
        // The token is the key: registering it moves it away from any other user.
        let registeredAt = event.occurredAt.microsecondsSinceEpoch
        // A registration from before the provider called the token dead (APNs's 410 timestamp) is stale: the token
        // stays inactive, whoever registers it.
        if let known = devices[device.token], !known.active, let died = known.unregisteredAt, registeredAt < died {
            return
        }
        var row =
            devices[device.token]
            ?? DeviceRow(user: event.recipient, device: device, active: true, registeredAt: registeredAt, stored: false)
        if row.user != event.recipient {
            tokensByUser[row.user]?.remove(device.token)
            row.moved = true
        }
        row.user = event.recipient
        row.device = device
        row.active = true
        row.registeredAt = registeredAt
        row.touched = true
        devices[device.token] = row
        tokensByUser[event.recipient, default: []].insert(device.token)
        planned.append(push(.badgeOnly, for: event, to: device, user: user))
        // Over the cap: the device registered longest ago goes (it gets no more pushes, like an unregistered one).
        // One per registration: a user over the cap from before it existed (devices registered before migration 5
        // all read as registered at 0) loses one device per new registration, never many at once.
        if let tokens = tokensByUser[event.recipient], tokens.count > maxDevicesPerUser,
            let oldest = tokens.min(by: { (devices[$0]?.registeredAt ?? 0, $0) < (devices[$1]?.registeredAt ?? 0, $1) })
        {
            tokensByUser[event.recipient]?.remove(oldest)
            devices[oldest]?.active = false
            devices[oldest]?.touched = true
        }
    }
}

extension EventRules {
    /// A push of `kind` for `event` to `device`, carrying the user's counts, badge, `badge_version` and preferences.
    func push(_ kind: PushKind, for event: Event, to device: RegisteredDevice, user: UserRow) -> PlannedPush {
        PlannedPush(
            event: event, device: device, kind: kind, counts: user.counts,
            badge: policy.badge(for: user.counts, badgeEnabled: user.badgeEnabled), badgeVersion: user.badgeVersion,
            previews: user.previews)
    }

    /// One push of `kind` to each active device of the recipient, in token order (Swift string order, as the
    /// model, independent of the database's collation). An alert keeps its event's JSON for the outbox: `json` when
    /// the caller already encoded it (a new notification stores it too), else encoded here.
    mutating func planPushes(_ kind: PushKind, for event: Event, user: UserRow, json: String? = nil) {
        guard let tokens = tokensByUser[event.recipient], !tokens.isEmpty else { return }
        if kind.isAlert {
            eventJSON[event.id] = json ?? String(decoding: event.jsonData(), as: UTF8.self)
        }
        for token in tokens.sorted() {
            guard let row = devices[token] else { continue }
            planned.append(push(kind, for: event, to: row.device, user: user))
        }
    }
}

extension EventRules {
    /// Writes what the batch changed, one part per table and kind of change, and the outbox in planning order, as
    /// one ``SQLWriteBatch`` (one statement on PostgreSQL); returns the outbox rows of ``planned`` (ids increasing
    /// in planning order).
    func write() async throws -> [WrittenPush] {
        var batch = SQLWriteBatch()
        addNotifications(to: &batch)
        addTombstones(to: &batch)
        addMessages(to: &batch)
        addWatermarks(to: &batch)
        addDevices(to: &batch)
        addUsers(to: &batch)
        addOutbox(to: &batch)
        let returned = try await batch.run(sql: sql)
        return planned.isEmpty ? [] : try writtenPushes(returned)
    }

    private func addNotifications(to batch: inout SQLWriteBatch) {
        var inserted = SQLRowSet(
            [
                ("user_id", .text), ("id", .text), ("occurred_at", .int), ("read", .bool), ("seen", .bool),
                ("event_json", .text),
            ])
        var updated = SQLRowSet([("user_id", .text), ("id", .text), ("read", .bool), ("seen", .bool)])
        for (user, rows) in notifications.sorted(by: { $0.key < $1.key }) {
            for (id, row) in rows.sorted(by: { $0.key < $1.key }) {
                if row.isNew {
                    inserted.append([
                        .text(user), .text(id), .int(row.occurredAt), .bool(row.read), .bool(row.seen),
                        row.eventJSON.map(SQLValue.text) ?? .null,
                    ])
                } else if row.changed {
                    updated.append([.text(user), .text(id), .bool(row.read), .bool(row.seen)])
                }
            }
        }
        // `stored_at`: the database's now, the order in which the app's stream announces new notifications.
        let now = FleetQueries.statementNow(sql.dialect)
        batch.add(inserted) {
            "INSERT INTO notifications (user_id, id, occurred_at, read, seen, event_json, stored_at) "
                + "SELECT user_id, id, occurred_at, read, seen, event_json, \(now) FROM \($0) WHERE true "
                + "ON CONFLICT (user_id, id) DO NOTHING"
        }
        batch.add(updated) {
            "UPDATE notifications SET read = s.read, seen = s.seen FROM \($0) "
                + "WHERE notifications.user_id = s.user_id AND notifications.id = s.id"
        }
    }

    private func addTombstones(to batch: inout SQLWriteBatch) {
        var removed = SQLRowSet([("user_id", .text), ("id", .text)])
        for key in tombstonesRemoved.sorted(by: Self.userItemOrder) {
            removed.append([.text(key.user), .text(key.item)])
        }
        var added = SQLRowSet([("user_id", .text), ("id", .text)])
        for key in tombstonesAdded.sorted(by: Self.userItemOrder) {
            added.append([.text(key.user), .text(key.item)])
        }
        // The users first, as an index condition (see `SQLDialect.among`): a generic plan made while the table was
        // empty would otherwise scan every tombstone for each batch that removes one.
        let dialect = sql.dialect
        batch.add(removed) {
            "DELETE FROM read_tombstones WHERE \(dialect.among("user_id", "SELECT user_id FROM \($0)")) "
                + "AND (user_id, notification_id) IN (SELECT user_id, id FROM \($0))"
        }
        batch.add(added) {
            "INSERT INTO read_tombstones (user_id, notification_id, created_at) "
                + "SELECT user_id, id, \(FleetQueries.statementNow(dialect)) FROM \($0) "
                + "WHERE true "
                + "ON CONFLICT (user_id, notification_id) DO NOTHING"
        }
    }

    private func addMessages(to batch: inout SQLWriteBatch) {
        var inserted = SQLRowSet(
            [
                ("user_id", .text), ("event_id", .text), ("conversation_id", .text), ("occurred_at", .int),
                ("read", .bool),
            ])
        var updated = SQLRowSet([("user_id", .text), ("event_id", .text)])
        for (key, rows) in messages.sorted(by: { Self.userItemOrder($0.key, $1.key) }) {
            for (id, row) in rows.sorted(by: { $0.key < $1.key }) {
                if row.isNew {
                    inserted.append(
                        [.text(key.user), .text(id), .text(key.item), .int(row.occurredAt), .bool(row.read)])
                } else if row.changed {
                    updated.append([.text(key.user), .text(id)])
                }
            }
        }
        batch.add(inserted) {
            "INSERT INTO messages (user_id, event_id, conversation_id, occurred_at, read) "
                + "SELECT user_id, event_id, conversation_id, occurred_at, read FROM \($0) WHERE true "
                + "ON CONFLICT (user_id, event_id) DO NOTHING"
        }
        batch.add(updated) {
            "UPDATE messages SET read = TRUE FROM \($0) "
                + "WHERE messages.user_id = s.user_id AND messages.event_id = s.event_id"
        }
    }

    private func addWatermarks(to batch: inout SQLWriteBatch) {
        var set = SQLRowSet([("user_id", .text), ("conversation_id", .text), ("read_until", .int)])
        for key in changedWatermarks.sorted(by: Self.userItemOrder) {
            guard let until = watermarks[key] else { continue }
            set.append([.text(key.user), .text(key.item), .int(until)])
        }
        batch.add(set) {
            "INSERT INTO conversation_watermarks (user_id, conversation_id, read_until) "
                + "SELECT user_id, conversation_id, read_until FROM \($0) WHERE true "
                + "ON CONFLICT (user_id, conversation_id) DO UPDATE SET read_until = excluded.read_until "
                + "WHERE conversation_watermarks.read_until < excluded.read_until"
        }
    }

    /// Upserts every device the batch touched with its final state. A token that moved to another user starts
    /// its `pushed_version` again (-1); otherwise the stored one is kept: rows that keep it carry the marker -2,
    /// which never reaches the table (such rows exist, so they always take the `DO UPDATE` path).
    private func addDevices(to batch: inout SQLWriteBatch) {
        var set = SQLRowSet(
            [
                ("token", .text), ("user_id", .text), ("provider", .text), ("topic", .text), ("environment", .text),
                ("active", .bool), ("pushed_version", .int), ("registered_at", .int), ("app", .text),
            ])
        for (token, row) in devices.sorted(by: { $0.key < $1.key }) where row.touched {
            set.append([
                .text(token), .text(row.user), .text(row.device.provider.rawValue), .text(row.device.topic),
                .text(row.device.environment?.rawValue), .bool(row.active), .int(row.stored && !row.moved ? -2 : -1),
                .int(row.registeredAt), .text(row.device.app),
            ])
        }
        batch.add(set) {
            "INSERT INTO devices (token, user_id, provider, topic, environment, active, pushed_version, "
                + "registered_at, app) SELECT token, user_id, provider, topic, environment, active, pushed_version, "
                + "registered_at, app FROM \($0) "
                + "WHERE true ORDER BY token ON CONFLICT (token) DO UPDATE SET user_id = excluded.user_id, "
                + "provider = excluded.provider, topic = excluded.topic, environment = excluded.environment, "
                + "active = excluded.active, registered_at = excluded.registered_at, app = excluded.app, "
                + "pushed_version = CASE WHEN excluded.pushed_version = -2 "
                + "THEN devices.pushed_version ELSE -1 END"
        }
    }

    private func addUsers(to batch: inout SQLWriteBatch) {
        var set = SQLRowSet(
            [
                ("user_id", .text), ("unread_notifications", .int), ("unseen_notifications", .int),
                ("unread_messages", .int), ("badge_version", .int), ("badge_enabled", .bool), ("previews", .bool),
                ("read_all_until", .int), ("opened_until", .int),
            ])
        for (id, user) in users.sorted(by: { $0.key < $1.key }) where loadedUsers[id] != user {
            set.append([
                .text(id), .int(user.unreadNotifications), .int(user.unseenNotifications), .int(user.unreadMessages),
                .int(user.badgeVersion), .bool(user.badgeEnabled), .bool(user.previews), .int(user.readAllUntil),
                .int(user.openedUntil),
            ])
        }
        batch.add(set) {
            """
            UPDATE users SET unread_notifications = s.unread_notifications,
                unseen_notifications = s.unseen_notifications, unread_messages = s.unread_messages,
                badge_version = s.badge_version, badge_enabled = s.badge_enabled, previews = s.previews,
                read_all_until = s.read_all_until, opened_until = s.opened_until
            FROM \($0) WHERE users.user_id = s.user_id
            """
        }
    }

    static func userItemOrder(_ lhs: UserItem, _ rhs: UserItem) -> Bool {
        (lhs.user, lhs.item) < (rhs.user, rhs.item)
    }
}

extension EventRules {
    /// One row of ``planned`` as the outbox insert returned it.
    struct WrittenPush: Equatable {
        var id: Int64
        /// When it was planned: the database's now in the insert.
        var createdAt: Int64
    }

    /// Adds `planned` to `batch` as its last parts: the events of its alerts, each once (``OutboxEvents``), then the
    /// outbox insert, whose `RETURNING` ``writtenPushes(_:)`` reads. `created_at` is the database's now. Nothing is
    /// claimed here: the partition's delivery stage claims every push (`DeliveryQueries.claimDue`).
    func addOutbox(to batch: inout SQLWriteBatch) {
        // One row per event with an alert planned, however many devices it goes to. An event id is planned once
        // (`processed_events`): a row already there is that event's, left by a first copy older than the retention
        // whose pushes still wait.
        let now = FleetQueries.statementNow(sql.dialect)
        var events = SQLRowSet([("event_id", .text), ("event_json", .text)])
        var written = Set<String>()
        for push in planned where push.kind.isAlert && !written.contains(push.eventID) {
            guard let json = eventJSON[push.eventID] else { continue }
            written.insert(push.eventID)
            events.append([.text(push.eventID), .text(json)])
        }
        batch.add(events) {
            "INSERT INTO outbox_events (event_id, event_json, created_at) SELECT event_id, event_json, \(now) "
                + "FROM \($0) WHERE true ON CONFLICT (event_id) DO NOTHING"
        }
        var set = OutboxRow.rowSet()
        for (push, pushPartition) in zip(planned, plannedPartitions) {
            set.append(OutboxRow.values(of: push, partition: pushPartition))
        }
        batch.add(set) {
            "INSERT INTO outbox (\(OutboxRow.insertColumns)) SELECT \(OutboxRow.valueColumns), \(now) FROM \($0) "
                + "WHERE true ORDER BY ord RETURNING id, event_id, token, created_at"
        }
    }

    /// The outbox rows of `planned` (ids increasing in planning order) from the outbox insert's `returned` rows.
    func writtenPushes(_ returned: [SQLRow]) throws -> [WrittenPush] {
        var byKey: [String: WrittenPush] = [:]
        for row in returned {
            guard let id = try row["id"].int64, let eventID = try row["event_id"].string,
                let token = try row["token"].string
            else { throw StoreError.corrupt("bad outbox RETURNING row") }
            byKey[eventID + " " + token] = WrittenPush(id: id, createdAt: try row["created_at"].int64 ?? 0)
        }
        var rows: [WrittenPush] = []
        rows.reserveCapacity(planned.count)
        for push in planned {
            guard let row = byKey[push.eventID + " " + push.token] else {
                throw StoreError.corrupt("outbox id missing for a push")
            }
            // Both databases number the rows of an ordered INSERT … SELECT in order; the outbox order relies on it.
            guard row.id > (rows.last?.id ?? .min) else { throw StoreError.corrupt("outbox ids out of planning order") }
            rows.append(row)
        }
        return rows
    }
}
