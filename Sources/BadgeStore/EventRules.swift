import BadgeCore

/// The contract's count rules, applied to the database through an ``SQLExecutor``; the tests check them against
/// the reference model (`InboxModel` in `Tests/BadgeModel`).
///
/// Written once for both backends. The counters live in the `users` row and are maintained: each statement
/// touches only rows that change state (a notification changes state at most twice in its life), so the cost
/// of an event does not grow with the number of stored notifications.
struct EventRules {
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

        /// Reads the row from the cells of ``columns``, starting at `offset`.
        init(cells: [SQLValue], offset: Int = 0) throws {
            guard cells.count >= offset + 8,
                let unreadNotifications = cells[offset].int64, let unseenNotifications = cells[offset + 1].int64,
                let unreadMessages = cells[offset + 2].int64, let badgeVersion = cells[offset + 3].int64,
                let badgeEnabled = cells[offset + 4].bool, let previews = cells[offset + 5].bool
            else { throw StoreError.corrupt("bad users row") }
            self.unreadNotifications = unreadNotifications
            self.unseenNotifications = unseenNotifications
            self.unreadMessages = unreadMessages
            self.badgeVersion = badgeVersion
            self.badgeEnabled = badgeEnabled
            self.previews = previews
            self.readAllUntil = cells[offset + 6].int64
            self.openedUntil = cells[offset + 7].int64
        }

        init() {}
    }

    let sql: any SQLExecutor
    let policy: BadgePolicy
    /// The partition queue the batch came from, recorded on its outbox rows.
    let partition: Int?
    /// Runs before each event with its index in the batch (a test hook for injecting failures).
    let beforeEvent: (@Sendable (Int, any SQLExecutor) async throws -> Void)?

    private var users: [String: UserRow] = [:]
    private var loaded: [String: UserRow] = [:]
    /// Event ids of the batch that were not processed before; an id leaves the set at its first use.
    private var fresh: Set<String> = []
    /// Active devices per user, read (and on PostgreSQL share-locked) once per batch; cleared by device events.
    private var devices: [String: [RegisteredDevice]] = [:]
    /// The batch's pushes in planning order, written to the outbox at the end of the batch.
    private var planned: [PlannedPush] = []
    /// The serialised event of each alert in `planned`, by event id.
    private var eventJSON: [String: String] = [:]

    init(
        sql: any SQLExecutor, policy: BadgePolicy, partition: Int? = nil,
        beforeEvent: (@Sendable (Int, any SQLExecutor) async throws -> Void)? = nil
    ) {
        self.sql = sql
        self.policy = policy
        self.partition = partition
        self.beforeEvent = beforeEvent
    }

    // MARK: - Batch

    /// Applies `events` in order; the caller owns the transaction.
    mutating func apply(_ events: [Event]) async throws -> [AppliedEvent] {
        try await lockUsers(Set(events.map(\.recipient)))
        try await recordEventIDs(Set(events.map(\.id)))
        // Per event: whether it is a duplicate and the range of its pushes in `planned`.
        var outcomes: [(duplicate: Bool, pushes: Range<Int>)] = []
        outcomes.reserveCapacity(events.count)
        for (index, event) in events.enumerated() {
            if let beforeEvent { try await beforeEvent(index, sql) }
            let start = planned.count
            let duplicate = try await apply(event)
            outcomes.append((duplicate, start..<planned.count))
        }
        try await saveUsers()
        let ids = try await insertOutbox()
        return zip(events, outcomes).map { event, outcome in
            AppliedEvent(
                event: event, duplicate: outcome.duplicate,
                pushes: outcome.pushes.map { OutboxPush(id: ids[$0], push: planned[$0]) })
        }
    }

    /// Records the batch's event ids as processed; those that were new form `fresh`. Inserted in sorted order
    /// so that concurrent batches wait for each other rather than deadlock.
    private mutating func recordEventIDs(_ ids: Set<String>) async throws {
        for chunk in ids.sorted().chunked(1000) {
            let values = (1...chunk.count).map { "($\($0))" }.joined(separator: ", ")
            let rows = try await sql.query(
                "INSERT INTO processed_events (event_id) VALUES \(values) ON CONFLICT (event_id) DO NOTHING "
                    + "RETURNING event_id",
                chunk.map { .text($0) })
            for row in rows {
                guard let id = row.first?.string else { throw StoreError.corrupt("bad processed_events row") }
                fresh.insert(id)
            }
        }
    }

    /// Creates the missing `users` rows and locks all of the batch's rows, in one order (user id) so that
    /// concurrent batches on PostgreSQL do not deadlock; loads them into memory.
    private mutating func lockUsers(_ ids: Set<String>) async throws {
        let sorted = ids.sorted()
        for chunk in sorted.chunked(500) {
            let values = chunk.indices.map { "($\($0 - chunk.startIndex + 1))" }.joined(separator: ", ")
            try await sql.execute(
                "INSERT INTO users (user_id) VALUES \(values) ON CONFLICT (user_id) DO NOTHING",
                chunk.map { .text($0) })
            let list = chunk.indices.map { "$\($0 - chunk.startIndex + 1)" }.joined(separator: ", ")
            let rows = try await sql.query(
                "SELECT user_id, \(UserRow.columns) FROM users WHERE user_id IN (\(list)) ORDER BY user_id"
                    + sql.dialect.forUpdate,
                chunk.map { .text($0) })
            for row in rows {
                guard let id = row.first?.string else { throw StoreError.corrupt("users row without id") }
                let user = try UserRow(cells: row, offset: 1)
                users[id] = user
                loaded[id] = user
            }
        }
        for id in sorted where users[id] == nil {
            throw StoreError.corrupt("users row \(id) missing after insert")
        }
    }

    private func saveUsers() async throws {
        for (id, user) in users where loaded[id] != user {
            try await sql.execute(
                """
                UPDATE users SET unread_notifications = $2, unseen_notifications = $3, unread_messages = $4,
                    badge_version = $5, badge_enabled = $6, previews = $7, read_all_until = $8, opened_until = $9
                WHERE user_id = $1
                """,
                [
                    .text(id), .int(user.unreadNotifications), .int(user.unseenNotifications),
                    .int(user.unreadMessages), .int(user.badgeVersion), .bool(user.badgeEnabled),
                    .bool(user.previews), .int(user.readAllUntil), .int(user.openedUntil),
                ])
        }
    }

    // MARK: - One event

    /// Applies one event; returns whether it was a duplicate.
    private mutating func apply(_ event: Event) async throws -> Bool {
        guard fresh.remove(event.id) != nil else { return true }
        guard var user = users[event.recipient] else { throw StoreError.corrupt("user \(event.recipient) not locked") }
        switch event.type {
        case .follow, .amen, .comment, .mention, .followRequestAccepted, .messageRequestAccepted,
            .prayerReminder:
            try await applyNotification(event, to: &user)
        case .message:
            try await applyMessage(event, to: &user)
        case .conversationRead, .notificationRead, .notificationsReadAll, .notificationsOpened,
            .preferencesUpdated:
            try await applyBadgeUpdate(event, to: &user)
        case .deviceRegistered:
            try await applyDeviceRegistered(event, user: user)
        case .deviceUnregistered:
            if let token = event.device?.token {
                devices = [:]
                // Kept, inactive: its `pushed_version` still guards pushes planned before (a fleet may send one
                // of those later, after a takeover), so the device never gets an older version after a newer one.
                try await sql.execute(
                    "UPDATE devices SET active = FALSE WHERE token = $1 AND user_id = $2",
                    [.text(token), .text(event.recipient)])
            }
        }
        users[event.recipient] = user
        return false
    }

    private mutating func applyNotification(_ event: Event, to user: inout UserRow) async throws {
        guard !event.isSelfAction else { return }
        let occurredAt = event.occurredAt.microsecondsSinceEpoch
        let tombstoned = try await !sql.query(
            "DELETE FROM read_tombstones WHERE user_id = $1 AND notification_id = $2 RETURNING notification_id",
            [.text(event.recipient), .text(event.id)]
        ).isEmpty
        let read = tombstoned || (user.readAllUntil.map { occurredAt <= $0 } ?? false)
        let seen = user.openedUntil.map { occurredAt <= $0 } ?? false
        let stored = try await sql.query(
            """
            INSERT INTO notifications (user_id, id, occurred_at, read, seen) VALUES ($1, $2, $3, $4, $5)
            ON CONFLICT (user_id, id) DO NOTHING RETURNING id
            """,
            [.text(event.recipient), .text(event.id), .int(occurredAt), .bool(read), .bool(seen)])
        guard !stored.isEmpty, !read else { return }
        user.unreadNotifications += 1
        if !seen { user.unseenNotifications += 1 }
        user.badgeVersion += 1
        try await planPushes(.alert(event), for: event, user: user)
    }

    private mutating func applyMessage(_ event: Event, to user: inout UserRow) async throws {
        guard !event.isSelfAction else { return }
        let occurredAt = event.occurredAt.microsecondsSinceEpoch
        let conversation = event.conversationID ?? ""
        let watermark = try await sql.query(
            "SELECT read_until FROM conversation_watermarks WHERE user_id = $1 AND conversation_id = $2",
            [.text(event.recipient), .text(conversation)]
        ).first?.first?.int64
        let read = watermark.map { occurredAt <= $0 } ?? false
        let stored = try await sql.query(
            """
            INSERT INTO messages (user_id, event_id, conversation_id, occurred_at, read) VALUES ($1, $2, $3, $4, $5)
            ON CONFLICT (user_id, event_id) DO NOTHING RETURNING event_id
            """,
            [.text(event.recipient), .text(event.id), .text(conversation), .int(occurredAt), .bool(read)])
        guard !stored.isEmpty, !read else { return }
        user.unreadMessages += 1
        user.badgeVersion += 1
        try await planPushes(.alert(event), for: event, user: user)
    }

    private mutating func applyBadgeUpdate(_ event: Event, to user: inout UserRow) async throws {
        let before = user
        let recipient = SQLValue.text(event.recipient)
        let until = event.effectiveUntil.microsecondsSinceEpoch

        switch event.type {
        case .conversationRead:
            let conversation = SQLValue.text(event.conversationID ?? "")
            try await sql.execute(
                """
                INSERT INTO conversation_watermarks (user_id, conversation_id, read_until) VALUES ($1, $2, $3)
                ON CONFLICT (user_id, conversation_id) DO UPDATE SET read_until = excluded.read_until
                WHERE conversation_watermarks.read_until < excluded.read_until
                """,
                [recipient, conversation, .int(until)])
            let newlyRead = try await sql.query(
                """
                UPDATE messages SET read = TRUE
                WHERE user_id = $1 AND conversation_id = $2 AND NOT read AND occurred_at <= $3 RETURNING event_id
                """,
                [recipient, conversation, .int(until)])
            user.unreadMessages -= Int64(newlyRead.count)
        case .notificationRead:
            for id in event.notificationIDs {
                let newlyRead = try await sql.query(
                    "UPDATE notifications SET read = TRUE WHERE user_id = $1 AND id = $2 AND NOT read RETURNING seen",
                    [recipient, .text(id)])
                if let row = newlyRead.first {
                    user.unreadNotifications -= 1
                    if row.first?.bool == false { user.unseenNotifications -= 1 }
                } else {
                    // Not stored yet (or already read): remember it for when it arrives.
                    try await sql.execute(
                        """
                        INSERT INTO read_tombstones (user_id, notification_id) SELECT $1, $2
                        WHERE NOT EXISTS (SELECT 1 FROM notifications WHERE user_id = $1 AND id = $2)
                        ON CONFLICT (user_id, notification_id) DO NOTHING
                        """,
                        [recipient, .text(id)])
                }
            }
        case .notificationsReadAll:
            user.readAllUntil = max(user.readAllUntil ?? until, until)
            let newlyRead = try await sql.query(
                """
                UPDATE notifications SET read = TRUE
                WHERE user_id = $1 AND NOT read AND occurred_at <= $2 RETURNING seen
                """,
                [recipient, .int(until)])
            user.unreadNotifications -= Int64(newlyRead.count)
            user.unseenNotifications -= Int64(newlyRead.count(where: { $0.first?.bool == false }))
        case .notificationsOpened:
            user.openedUntil = max(user.openedUntil ?? until, until)
            let newlySeen = try await sql.query(
                """
                UPDATE notifications SET seen = TRUE
                WHERE user_id = $1 AND NOT read AND NOT seen AND occurred_at <= $2 RETURNING id
                """,
                [recipient, .int(until)])
            user.unseenNotifications -= Int64(newlySeen.count)
        case .preferencesUpdated:
            if let badgeEnabled = event.preferences?.badgeEnabled { user.badgeEnabled = badgeEnabled }
            if let previews = event.preferences?.previews { user.previews = previews }
        default:
            break
        }

        guard user.counts != before.counts || user.badgeEnabled != before.badgeEnabled else { return }
        user.badgeVersion += 1
        try await planPushes(.badgeOnly, for: event, user: user)
    }

    private mutating func applyDeviceRegistered(_ event: Event, user: UserRow) async throws {
        guard let info = event.device, let provider = info.provider else { return }
        devices = [:]
        let device = RegisteredDevice(
            token: info.token, provider: provider, topic: info.topic, environment: info.environment)
        // The token is the key: registering it moves it away from any other user.
        try await sql.execute(
            """
            INSERT INTO devices (token, user_id, provider, topic, environment, active)
            VALUES ($1, $2, $3, $4, $5, TRUE)
            ON CONFLICT (token) DO UPDATE SET user_id = excluded.user_id, provider = excluded.provider,
                topic = excluded.topic, environment = excluded.environment, active = TRUE,
                pushed_version = CASE WHEN devices.user_id = excluded.user_id THEN devices.pushed_version ELSE -1 END
            """,
            [
                .text(device.token), .text(event.recipient), .text(provider.rawValue), .text(device.topic),
                .text(device.environment?.rawValue),
            ])
        planned.append(push(.badgeOnly, for: event, to: device, user: user))
    }

    // MARK: - Pushes

    private func push(_ kind: PushKind, for event: Event, to device: RegisteredDevice, user: UserRow) -> PlannedPush {
        PlannedPush(
            event: event, device: device, kind: kind, counts: user.counts,
            badge: policy.badge(for: user.counts, badgeEnabled: user.badgeEnabled), badgeVersion: user.badgeVersion,
            previews: user.previews)
    }

    /// One push of `kind` to each active device of the recipient, in token order.
    private mutating func planPushes(_ kind: PushKind, for event: Event, user: UserRow) async throws {
        let recipientDevices: [RegisteredDevice]
        if let cached = devices[event.recipient] {
            recipientDevices = cached
        } else {
            recipientDevices = try await StoreQueries.activeDevices(of: event.recipient, sql: sql, lock: true)
            devices[event.recipient] = recipientDevices
        }
        guard !recipientDevices.isEmpty else { return }
        if kind.isAlert {
            eventJSON[event.id] = String(decoding: event.jsonData(), as: UTF8.self)
        }
        planned += recipientDevices.map { push(kind, for: event, to: $0, user: user) }
    }

    /// Writes `planned` to the outbox, a few hundred rows per statement, and returns their ids (increasing in
    /// planning order).
    private func insertOutbox() async throws -> [Int64] {
        var ids: [Int64] = []
        ids.reserveCapacity(planned.count)
        for chunk in planned.chunked(500) {
            var binds: [SQLValue] = []
            var rows: [String] = []
            for push in chunk {
                let values = OutboxRow.values(
                    of: push, eventJSON: push.kind.isAlert ? eventJSON[push.eventID] : nil, partition: partition)
                let first = binds.count + 1
                rows.append("(" + (first..<first + values.count).map { "$\($0)" }.joined(separator: ", ") + ")")
                binds.append(contentsOf: values)
            }
            let returned = try await sql.query(
                "INSERT INTO outbox (\(OutboxRow.insertColumns)) VALUES \(rows.joined(separator: ", ")) "
                    + "RETURNING id, event_id, token",
                binds)
            var byKey: [String: Int64] = [:]
            for row in returned {
                guard row.count == 3, let id = row[0].int64, let eventID = row[1].string, let token = row[2].string
                else { throw StoreError.corrupt("bad outbox RETURNING row") }
                byKey[eventID + " " + token] = id
            }
            for push in chunk {
                guard let id = byKey[push.eventID + " " + push.token] else {
                    throw StoreError.corrupt("outbox id missing for a push")
                }
                // Both databases number a multi-row VALUES list in order; the outbox order relies on it.
                guard id > (ids.last ?? .min) else { throw StoreError.corrupt("outbox ids out of planning order") }
                ids.append(id)
            }
        }
        return ids
    }
}

extension Array {
    /// Consecutive slices of at most `size` elements.
    func chunked(_ size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}
