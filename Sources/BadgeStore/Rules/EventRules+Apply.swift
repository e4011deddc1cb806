import BadgeCore

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
