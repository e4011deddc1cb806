import BadgeWire

/// One user's counts, as carried in every push (`counts` in the payload).
public struct Counts: Sendable, Equatable, Hashable {
    /// Notifications not read.
    public var unreadNotifications: Int
    /// Unread notifications not seen (seen by `notifications_opened`).
    public var unseenNotifications: Int
    /// Chat messages not read.
    public var unreadMessages: Int

    /// Creates counts; all default to 0.
    public init(unreadNotifications: Int = 0, unseenNotifications: Int = 0, unreadMessages: Int = 0) {
        self.unreadNotifications = unreadNotifications
        self.unseenNotifications = unseenNotifications
        self.unreadMessages = unreadMessages
    }

    /// All counts 0.
    public static let zero = Counts()

    /// The `counts` object of a push payload:
    /// `{"unread_notifications":…,"unseen_notifications":…,"unread_messages":…}`.
    public func jsonObject() -> JSONValue {
        .object([
            (key: "unread_notifications", value: .int(Int64(unreadNotifications))),
            (key: "unseen_notifications", value: .int(Int64(unseenNotifications))),
            (key: "unread_messages", value: .int(Int64(unreadMessages))),
        ])
    }
}

/// Which notifications count toward the badge (a deployment setting, `--badge-policy`).
public enum BadgePolicy: String, Sendable, CaseIterable {
    /// badge = unseen notifications + unread messages (the default).
    case unseen
    /// badge = unread notifications + unread messages.
    case unread

    /// The badge for `counts` under this policy; 0 when the user disabled the badge.
    public func badge(for counts: Counts, badgeEnabled: Bool) -> Int {
        guard badgeEnabled else { return 0 }
        switch self {
        case .unseen: return counts.unseenNotifications + counts.unreadMessages
        case .unread: return counts.unreadNotifications + counts.unreadMessages
        }
    }

    /// The badge for `counts` under `policy`; same as `policy.badge(for:badgeEnabled:)`.
    public static func badge(counts: Counts, policy: BadgePolicy, badgeEnabled: Bool) -> Int {
        policy.badge(for: counts, badgeEnabled: badgeEnabled)
    }
}
