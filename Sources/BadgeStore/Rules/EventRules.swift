import BadgeCore

/// The contract's count rules, applied to the database through an ``SQLExecutor``; the tests check them against
/// the reference model (`InboxModel` in `Tests/BadgeModel`).
///
/// Written once for both backends, set-based: a batch costs a constant number of statements whatever its size.
/// 1. **Load** (``load(_:)``): record the batch's event ids, create and lock its users' rows (in user-id order, so
///    concurrent batches wait for each other instead of deadlocking), and read, one statement per kind, exactly
///    the rows the batch can change: the notifications and messages its read-state events would turn read or
///    seen, the tombstones, watermarks and devices it touches.
/// 2. **Apply** in memory, event by event, in order: the same rules as the model, so each push carries the counts
///    and `badge_version` right after its event.
/// 3. **Write** (``write()``): one statement per table for everything that changed, and the outbox in planning
///    order.
///
/// Every loaded row changes state in the batch (a notification changes state at most twice in its life), so the
/// cost of an event does not grow with the number of stored or unread notifications. The counters live in the
/// `users` row and are maintained, never recounted.
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

    let sql: any SQLExecutor
    let policy: BadgePolicy
    /// The partition queue the batch came from, recorded on its outbox rows.
    let partition: Int?
    /// See ``ApplyContext/maxDevicesPerUser``.
    let maxDevicesPerUser: Int
    /// Runs before each event with its index in the batch (a test hook for injecting failures).
    let beforeEvent: (@Sendable (Int, any SQLExecutor) async throws -> Void)?

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
    /// When the batch's pushes are planned (their outbox `created_at`), by this process's clock.
    let createdAt = Timestamp.now().microsecondsSinceEpoch

    init(
        sql: any SQLExecutor, policy: BadgePolicy, partition: Int? = nil,
        maxDevicesPerUser: Int = ApplyContext.defaultMaxDevicesPerUser,
        beforeEvent: (@Sendable (Int, any SQLExecutor) async throws -> Void)? = nil
    ) {
        self.sql = sql
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
            outcomes.append((duplicate, start..<planned.count))
        }
        let ids = try await write()
        return zip(events, outcomes).map { event, outcome in
            AppliedEvent(
                event: event, duplicate: outcome.duplicate,
                pushes: outcome.pushes.map { OutboxPush(id: ids[$0], push: planned[$0], createdAt: createdAt) })
        }
    }

    // MARK: - One event

    /// Applies one event in memory; returns whether it was a duplicate.
    private mutating func apply(_ event: Event) throws -> Bool {
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
        notifications[event.recipient, default: [:]][event.id] = NotificationRow(
            occurredAt: occurredAt, read: read, seen: seen, isNew: true)
        guard !read else { return }
        user.unreadNotifications += 1
        if !seen { user.unseenNotifications += 1 }
        user.badgeVersion += 1
        planPushes(.alert(event), for: event, user: user)
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

        guard user.counts != before.counts || user.badgeEnabled != before.badgeEnabled else { return }
        user.badgeVersion += 1
        planPushes(.badgeOnly, for: event, user: user)
    }

    private mutating func applyDeviceRegistered(_ event: Event, user: UserRow) {
        guard let info = event.device, let provider = info.provider else { return }
        let device = RegisteredDevice(
            token: info.token, provider: provider, topic: info.topic, environment: info.environment)
        // The token is the key: registering it moves it away from any other user.
        let registeredAt = event.occurredAt.microsecondsSinceEpoch
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

    // MARK: - Pushes

    private func push(_ kind: PushKind, for event: Event, to device: RegisteredDevice, user: UserRow) -> PlannedPush {
        PlannedPush(
            event: event, device: device, kind: kind, counts: user.counts,
            badge: policy.badge(for: user.counts, badgeEnabled: user.badgeEnabled), badgeVersion: user.badgeVersion,
            previews: user.previews)
    }

    /// One push of `kind` to each active device of the recipient, in token order (Swift string order, as the
    /// model, independent of the database's collation).
    private mutating func planPushes(_ kind: PushKind, for event: Event, user: UserRow) {
        guard let tokens = tokensByUser[event.recipient], !tokens.isEmpty else { return }
        if kind.isAlert {
            eventJSON[event.id] = String(decoding: event.jsonData(), as: UTF8.self)
        }
        for token in tokens.sorted() {
            guard let row = devices[token] else { continue }
            planned.append(push(kind, for: event, to: row.device, user: user))
        }
    }
}

extension Array {
    /// Consecutive slices of at most `size` elements.
    func chunked(_ size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}
