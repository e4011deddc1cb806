import BadgeCore
import BadgeWire

/// A pure, in-memory reference model of the contract's count rules (sections 1–2).
///
/// Apply events one at a time, in order, with ``apply(_:)``; it answers each user's counts, badge and
/// badge version, and which pushes each event causes. It is the executable specification that the
/// database store is checked against, so it favours plainness over speed: counts are recomputed from the
/// stored notifications and messages rather than kept incrementally.
public struct InboxModel: Sendable {
    /// The deployment's badge policy.
    public let policy: BadgePolicy

    var users: [String: UserState] = [:]
    /// Every event id applied so far (idempotency is global by event id).
    var processedEventIDs: Set<String> = []
    /// Which user holds each active device token.
    var tokenOwners: [String: String] = [:]

    /// The most active devices a user keeps: a registration beyond it drops the device registered longest ago (by
    /// its registration's `occurred_at`; ties: the smallest token).
    public let maxDevicesPerUser: Int

    /// Creates an empty model.
    public init(policy: BadgePolicy = .unseen, maxDevicesPerUser: Int = 100) {
        self.policy = policy
        self.maxDevicesPerUser = maxDevicesPerUser
    }

    /// The counts of `user` (zero for an unknown user).
    public func counts(of user: String) -> Counts {
        users[user]?.counts ?? .zero
    }

    /// The badge of `user` under the model's policy (0 when the badge is disabled).
    public func badge(of user: String) -> Int {
        let state = users[user] ?? UserState()
        return policy.badge(for: state.counts, badgeEnabled: state.badgeEnabled)
    }

    /// The badge version of `user`: 0 at first, +1 with every change to the counts or `badge_enabled`.
    public func badgeVersion(of user: String) -> Int64 {
        users[user]?.badgeVersion ?? 0
    }

    /// The active devices of `user`, ordered by token.
    public func activeDevices(of user: String) -> [RegisteredDevice] {
        (users[user]?.devices.values).map { $0.sorted { $0.token < $1.token } } ?? []
    }

    /// The user's `badge_enabled` preference (default `true`).
    public func badgeEnabled(of user: String) -> Bool {
        users[user]?.badgeEnabled ?? true
    }

    /// The user's `previews` preference (default `true`).
    public func previews(of user: String) -> Bool {
        users[user]?.previews ?? true
    }

    /// The user that holds the active device `token`, if any.
    public func owner(ofToken token: String) -> String? {
        tokenOwners[token]
    }

    /// Whether an event with this id has been applied.
    public func hasApplied(eventID: String) -> Bool {
        processedEventIDs.contains(eventID)
    }

    /// Whether `user` has a stored notification `id` and it is read; `nil` when it is not stored.
    public func isNotificationRead(_ id: String, of user: String) -> Bool? {
        users[user]?.notifications[id]?.read
    }

    /// Whether `user` has a stored notification `id` and it is seen; `nil` when it is not stored.
    public func isNotificationSeen(_ id: String, of user: String) -> Bool? {
        users[user]?.notifications[id]?.seen
    }
}

extension InboxModel {
    /// A stored notification.
    struct StoredNotification: Sendable {
        var occurredAt: Timestamp
        var read: Bool
        var seen: Bool
    }

    /// A stored chat message.
    struct StoredMessage: Sendable {
        var id: String
        var occurredAt: Timestamp
        var read: Bool
    }

    /// Everything the model knows about one user.
    struct UserState: Sendable {
        var notifications: [String: StoredNotification] = [:]
        /// Ids read by `notification_read` before the notification was stored.
        var readTombstones: Set<String> = []
        var readAllWatermark: Timestamp?
        var openedWatermark: Timestamp?
        /// Messages by conversation id.
        var messages: [String: [StoredMessage]] = [:]
        var conversationReadWatermarks: [String: Timestamp] = [:]
        var badgeEnabled = true
        var previews = true
        var badgeVersion: Int64 = 0
        /// Active devices by token.
        var devices: [String: RegisteredDevice] = [:]
        /// When each device was last registered.
        var registeredAt: [String: Timestamp] = [:]

        var counts: Counts {
            var counts = Counts()
            for notification in notifications.values where !notification.read {
                counts.unreadNotifications += 1
                if !notification.seen { counts.unseenNotifications += 1 }
            }
            for conversation in messages.values {
                counts.unreadMessages += conversation.count(where: { !$0.read })
            }
            return counts
        }

        var sortedDevices: [RegisteredDevice] {
            devices.values.sorted { $0.token < $1.token }
        }
    }
}
