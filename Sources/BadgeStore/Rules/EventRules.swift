import BadgeCore
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
