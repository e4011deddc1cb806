import BadgeCore

extension InboxModel {
    /// Applies one event and returns the pushes it causes.
    ///
    /// Rules (contract sections 1–2):
    /// - An event id applied before does nothing (idempotency is global by event id).
    /// - A notification or message whose actor is the recipient does nothing.
    /// - A notification is stored read if a tombstone for its id exists or the read-all watermark covers it,
    ///   and seen if the opened watermark covers it. If unread: badge version +1 and an alert to every
    ///   active device; if read on arrival: no push, no version change.
    /// - A message is read on arrival if its conversation's read watermark covers it (then no push); else
    ///   badge version +1 and an alert to every active device.
    /// - Read-state events and `preferences_updated`: when the counts or `badge_enabled` change, badge
    ///   version +1 (once) and a badge-only push to every active device; otherwise no push.
    /// - `device_registered`: the token moves to the recipient (from any other user) and gets one badge-only
    ///   push with the current badge and version (no version change). `device_unregistered`: deactivates
    ///   the token if the recipient holds it.
    public mutating func apply(_ event: Event) -> EventOutcome {
        guard processedEventIDs.insert(event.id).inserted else {
            return EventOutcome(isDuplicate: true)
        }
        var user = users[event.recipient] ?? UserState()
        defer { users[event.recipient] = user }

        switch event.type {
        case .follow, .amen, .comment, .mention, .followRequestAccepted, .messageRequestAccepted,
            .prayerReminder:
            return applyNotification(event, to: &user)
        case .message:
            return applyMessage(event, to: &user)
        case .conversationRead, .notificationRead, .notificationsReadAll, .notificationsOpened,
            .preferencesUpdated:
            return applyBadgeUpdate(event, to: &user)
        case .deviceRegistered:
            return applyDeviceRegistered(event, to: &user)
        case .deviceUnregistered:
            guard let token = event.device?.token, user.devices.removeValue(forKey: token) != nil else {
                return EventOutcome()
            }
            tokenOwners[token] = nil
            return EventOutcome(changed: true)
        }
    }

    // MARK: - Notifications and messages

    private func applyNotification(_ event: Event, to user: inout UserState) -> EventOutcome {
        guard !event.isSelfAction, user.notifications[event.id] == nil else { return EventOutcome() }
        let tombstoned = user.readTombstones.remove(event.id) != nil
        let coveredByReadAll = user.readAllWatermark.map { event.occurredAt <= $0 } ?? false
        let read = tombstoned || coveredByReadAll
        let seen = user.openedWatermark.map { event.occurredAt <= $0 } ?? false
        user.notifications[event.id] = StoredNotification(occurredAt: event.occurredAt, read: read, seen: seen)
        guard !read else { return EventOutcome(changed: true) }
        user.badgeVersion += 1
        return EventOutcome(pushes: pushes(.alert(event), for: event, user: user), changed: true)
    }

    private func applyMessage(_ event: Event, to user: inout UserState) -> EventOutcome {
        guard !event.isSelfAction else { return EventOutcome() }
        let conversation = event.conversationID ?? ""
        let read = user.conversationReadWatermarks[conversation].map { event.occurredAt <= $0 } ?? false
        user.messages[conversation, default: []].append(
            StoredMessage(id: event.id, occurredAt: event.occurredAt, read: read))
        guard !read else { return EventOutcome(changed: true) }
        user.badgeVersion += 1
        return EventOutcome(pushes: pushes(.alert(event), for: event, user: user), changed: true)
    }

    // MARK: - Read state and preferences

    private func applyBadgeUpdate(_ event: Event, to user: inout UserState) -> EventOutcome {
        let countsBefore = user.counts
        let badgeEnabledBefore = user.badgeEnabled
        var changed = false
        let until = event.effectiveUntil

        switch event.type {
        case .conversationRead:
            let conversation = event.conversationID ?? ""
            let old = user.conversationReadWatermarks[conversation]
            if old.map({ until > $0 }) ?? true {
                user.conversationReadWatermarks[conversation] = until
                changed = true
            }
            if var messages = user.messages[conversation] {
                for index in messages.indices where !messages[index].read && messages[index].occurredAt <= until {
                    messages[index].read = true
                    changed = true
                }
                user.messages[conversation] = messages
            }
        case .notificationRead:
            for id in event.notificationIDs {
                if let stored = user.notifications[id] {
                    if !stored.read {
                        user.notifications[id]?.read = true
                        changed = true
                    }
                } else if user.readTombstones.insert(id).inserted {
                    changed = true
                }
            }
        case .notificationsReadAll:
            if user.readAllWatermark.map({ until > $0 }) ?? true {
                user.readAllWatermark = until
                changed = true
            }
            for (id, stored) in user.notifications where !stored.read && stored.occurredAt <= until {
                user.notifications[id]?.read = true
                changed = true
            }
        case .notificationsOpened:
            if user.openedWatermark.map({ until > $0 }) ?? true {
                user.openedWatermark = until
                changed = true
            }
            for (id, stored) in user.notifications where !stored.read && !stored.seen && stored.occurredAt <= until {
                user.notifications[id]?.seen = true
                changed = true
            }
        case .preferencesUpdated:
            if let badgeEnabled = event.preferences?.badgeEnabled, badgeEnabled != user.badgeEnabled {
                user.badgeEnabled = badgeEnabled
                changed = true
            }
            if let previews = event.preferences?.previews, previews != user.previews {
                user.previews = previews
                changed = true
            }
        default:
            break
        }

        guard user.counts != countsBefore || user.badgeEnabled != badgeEnabledBefore else {
            return EventOutcome(changed: changed)
        }
        user.badgeVersion += 1
        return EventOutcome(pushes: pushes(.badgeOnly, for: event, user: user), changed: true)
    }

    // MARK: - Devices

    private mutating func applyDeviceRegistered(_ event: Event, to user: inout UserState) -> EventOutcome {
        guard let info = event.device, let provider = info.provider else { return EventOutcome() }
        let device = RegisteredDevice(
            token: info.token, provider: provider, topic: info.topic, environment: info.environment)
        if let previousOwner = tokenOwners[device.token], previousOwner != event.recipient {
            users[previousOwner]?.devices[device.token] = nil
        }
        var changed = user.devices[device.token] != device
        user.devices[device.token] = device
        user.registeredAt[device.token] = event.occurredAt
        tokenOwners[device.token] = event.recipient
        let push = PlannedPush(
            event: event, device: device, kind: .badgeOnly, counts: user.counts,
            badge: policy.badge(for: user.counts, badgeEnabled: user.badgeEnabled),
            badgeVersion: user.badgeVersion, previews: user.previews)
        if user.devices.count > maxDevicesPerUser {
            let registered = user.registeredAt
            let oldest = user.devices.keys.min {
                (registered[$0]?.microsecondsSinceEpoch ?? 0, $0) < (registered[$1]?.microsecondsSinceEpoch ?? 0, $1)
            }!
            user.devices[oldest] = nil
            tokenOwners[oldest] = nil
            changed = true
        }
        return EventOutcome(pushes: [push], changed: changed)
    }

    // MARK: - Pushes

    private func pushes(_ kind: PushKind, for event: Event, user: UserState) -> [PlannedPush] {
        let counts = user.counts
        let badge = policy.badge(for: counts, badgeEnabled: user.badgeEnabled)
        return user.sortedDevices.map { device in
            PlannedPush(
                event: event, device: device, kind: kind, counts: counts, badge: badge,
                badgeVersion: user.badgeVersion, previews: user.previews)
        }
    }
}
