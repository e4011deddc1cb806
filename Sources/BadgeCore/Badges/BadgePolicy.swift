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
