import BadgeCore

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
