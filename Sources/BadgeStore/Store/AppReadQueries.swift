import BadgeCore

/// The app's reads (``AppReads``), written once for both databases: one statement each, never a write.
enum AppReadQueries {
    static func userCounts(
        _ users: [String], policy: BadgePolicy, database: any SQLTransactor
    ) async throws -> [String: UserCounts] {
        guard !users.isEmpty else {
            // Still a read: `/readyz` asks the database this way whether it answers.
            _ = try await database.read("SELECT 1 AS one", [])
            return [:]
        }
        // A user named twice is read once.
        var distinct: [String] = []
        var named: Set<String> = []
        for user in users where named.insert(user).inserted { distinct.append(user) }
        guard distinct.count <= AppReadLimits.usersPerRead else {
            throw StoreError(
                code: .tooManyUsers,
                message: "at most \(AppReadLimits.usersPerRead) users per read, not \(distinct.count)",
                transient: false)
        }
        // The users as one row set: one bind and one SQL text whatever their number (an `IN` list of binds would
        // be a new statement for each count, each prepared on its own on PostgreSQL).
        var set = SQLRowSet([("user_id", .text)])
        for user in distinct { set.append([.text(user)]) }
        var binds = SQLBinds()
        let dialect = database.dialect
        let among = dialect.among("user_id", "SELECT user_id FROM \(set.table("s", binds: &binds, dialect: dialect))")
        let rows = try await database.read(
            "SELECT user_id, \(EventRules.UserRow.columns) FROM users WHERE \(among)", binds.values)
        var counts = Dictionary(uniqueKeysWithValues: distinct.map { ($0, UserCounts.zero) })
        for row in rows {
            guard let user = try row["user_id"].string else { continue }
            // The same row type and badge function as every planned and rebuilt push (guarantee 9).
            let stored = try EventRules.UserRow(row: row)
            counts[user] = UserCounts(
                counts: stored.counts, badge: policy.badge(for: stored.counts, badgeEnabled: stored.badgeEnabled),
                badgeVersion: stored.badgeVersion)
        }
        return counts
    }

    static let notificationColumns = "id, occurred_at, read, seen, event_json, stored_at"

    static func notification(_ row: SQLRow) throws -> StoredNotification {
        guard let id = try row["id"].string, let occurredAt = try row["occurred_at"].int64,
            let read = try row["read"].bool, let seen = try row["seen"].bool
        else { throw StoreError.corrupt("bad notifications row") }
        return StoredNotification(
            id: id, occurredAt: occurredAt, read: read, seen: seen, eventJSON: try row["event_json"].string,
            storedAt: try row["stored_at"].int64 ?? 0)
    }

    /// Newest first by `(occurred_at, id)`, strictly after `before`: a position, so pages neither repeat nor skip
    /// while notifications arrive (one newer than the first page's is not in the next pages; one older than the
    /// cursor is, in its place). One more row than asked tells whether there is a next page.
    static func notifications(
        of user: String, limit: Int, before: NotificationCursor?, unreadOnly: Bool, database: any SQLTransactor
    ) async throws -> NotificationPage {
        let limit = min(max(limit, 1), AppReadLimits.pageSize)
        var binds = SQLBinds()
        var conditions = ["user_id = \(binds.add(.text(user)))"]
        if unreadOnly { conditions.append("NOT read") }
        if let before {
            let at = binds.add(.int(before.occurredAt))
            let id = binds.add(.text(before.id))
            // The first part bounds the index range; the second leaves out the cursor's own time's rows up to it.
            conditions.append("occurred_at <= \(at) AND (occurred_at < \(at) OR id < \(id))")
        }
        let rows = try await database.read(
            "SELECT \(notificationColumns) FROM notifications WHERE \(conditions.joined(separator: " AND ")) "
                + "ORDER BY occurred_at DESC, id DESC LIMIT \(binds.add(.int(Int64(limit + 1))))", binds.values)
        var notifications = try rows.map(notification)
        var next: NotificationCursor?
        if notifications.count > limit {
            notifications.removeLast(notifications.count - limit)
            next = notifications.last.map { NotificationCursor(occurredAt: $0.occurredAt, id: $0.id) }
        }
        return NotificationPage(notifications: notifications, next: next)
    }

    static func unreadNotifications(
        of user: String, storedAfter: Int64, limit: Int, database: any SQLTransactor
    ) async throws -> [StoredNotification] {
        var binds = SQLBinds()
        let rows = try await database.read(
            "SELECT \(notificationColumns) FROM notifications WHERE user_id = \(binds.add(.text(user))) AND NOT read "
                + "AND stored_at > \(binds.add(.int(storedAfter))) ORDER BY stored_at, id "
                + "LIMIT \(binds.add(.int(Int64(min(max(limit, 1), AppReadLimits.pageSize)))))", binds.values)
        return try rows.map(notification)
    }

    /// ``unreadNotifications(of:storedAfter:limit:database:)`` for many users at once, each after its own
    /// `stored_at`: one statement over a row set of the users (at most ``AppReadLimits/usersPerRead``), up to
    /// `limit` notifications each, by `(stored_at, id)`.
    static func unreadNotifications(
        since: [String: Int64], limit: Int, database: any SQLTransactor
    ) async throws -> [String: [StoredNotification]] {
        guard !since.isEmpty else { return [:] }
        guard since.count <= AppReadLimits.usersPerRead else {
            throw StoreError(
                code: .tooManyUsers,
                message: "at most \(AppReadLimits.usersPerRead) users per read, not \(since.count)",
                transient: false)
        }
        var set = SQLRowSet([("user_id", .text), ("stored_after", .int)])
        for (user, after) in since.sorted(by: { $0.key < $1.key }) { set.append([.text(user), .int(after)]) }
        var binds = SQLBinds()
        let rows = binds.add(set.bind)
        let columns = "n.user_id, n.id, n.occurred_at, n.read, n.seen, n.event_json, n.stored_at"
        let from = set.joinEach(
            "w", reading: rows, dialect: database.dialect, table: "notifications", as: "n", columns: columns,
            on: "n.user_id = w.user_id AND NOT n.read AND n.stored_at > w.stored_after",
            limit: SQLRowLimit(
                count: min(max(limit, 1), AppReadLimits.pageSize), orderBy: "n.stored_at, n.id", per: "w.user_id"))
        var found: [String: [StoredNotification]] = [:]
        for row in try await database.read("SELECT \(columns) FROM \(from) ORDER BY n.stored_at, n.id", binds.values) {
            guard let user = try row["user_id"].string else { throw StoreError.corrupt("bad notifications row") }
            found[user, default: []].append(try notification(row))
        }
        return found
    }

    /// The user's unread messages grouped by conversation, latest first by `(last_message_at, conversation_id)`,
    /// strictly after `before`. It aggregates every unread message of the user (over the index of unread messages
    /// by user and conversation): its cost is the user's unread messages, which the badge counts anyway.
    static func conversations(
        of user: String, limit: Int, before: ConversationCursor?, database: any SQLTransactor
    ) async throws -> ConversationPage {
        let limit = min(max(limit, 1), AppReadLimits.pageSize)
        var binds = SQLBinds()
        var having = ""
        let userBind = binds.add(.text(user))
        if let before {
            let at = binds.add(.int(before.lastMessageAt))
            let id = binds.add(.text(before.conversationID))
            having =
                " HAVING (max(occurred_at) < \(at) OR (max(occurred_at) = \(at) AND conversation_id < \(id)))"
        }
        let rows = try await database.read(
            "SELECT conversation_id, count(*) AS unread, max(occurred_at) AS last_at FROM messages "
                + "WHERE user_id = \(userBind) AND NOT read GROUP BY conversation_id\(having) "
                + "ORDER BY last_at DESC, conversation_id DESC LIMIT \(binds.add(.int(Int64(limit + 1))))",
            binds.values)
        var conversations = try rows.map { row in
            guard let id = try row["conversation_id"].string, let unread = try row["unread"].int64,
                let last = try row["last_at"].int64
            else { throw StoreError.corrupt("bad conversations row") }
            return ConversationSummary(conversationID: id, unreadMessages: Int(unread), lastMessageAt: last)
        }
        var next: ConversationCursor?
        if conversations.count > limit {
            conversations.removeLast(conversations.count - limit)
            next = conversations.last.map {
                ConversationCursor(lastMessageAt: $0.lastMessageAt, conversationID: $0.conversationID)
            }
        }
        return ConversationPage(conversations: conversations, next: next)
    }
}

extension SQLBackedStore {
    public func userCounts(_ users: [String], policy: BadgePolicy) async throws -> [String: UserCounts] {
        try await AppReadQueries.userCounts(users, policy: policy, database: sqlBackend.database)
    }

    public func notifications(
        of user: String, limit: Int, before: NotificationCursor?, unreadOnly: Bool
    ) async throws -> NotificationPage {
        try await AppReadQueries.notifications(
            of: user, limit: limit, before: before, unreadOnly: unreadOnly, database: sqlBackend.database)
    }

    public func unreadNotifications(
        of user: String, storedAfter: Int64, limit: Int
    ) async throws
        -> [StoredNotification]
    {
        try await AppReadQueries.unreadNotifications(
            of: user, storedAfter: storedAfter, limit: limit, database: sqlBackend.database)
    }

    public func unreadNotifications(
        since: [String: Int64], limit: Int
    ) async throws -> [String: [StoredNotification]] {
        try await AppReadQueries.unreadNotifications(since: since, limit: limit, database: sqlBackend.database)
    }

    public func conversations(
        of user: String, limit: Int, before: ConversationCursor?
    ) async throws
        -> ConversationPage
    {
        try await AppReadQueries.conversations(of: user, limit: limit, before: before, database: sqlBackend.database)
    }
}

extension SQLiteStore: AppReads {}
extension PostgresStore: AppReads {}
