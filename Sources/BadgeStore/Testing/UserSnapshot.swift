import BadgeCore
import BadgeWire

/// The stored state of one user, for tests (see ``SQLBackedStore/snapshot(user:)``).
@_spi(Testing)
public struct UserSnapshot: Sendable, Equatable {
    /// The user id.
    public var user: String
    /// The maintained counts.
    public var counts: Counts
    /// The badge version (0 before any change).
    public var badgeVersion: Int64
    /// The `badge_enabled` preference.
    public var badgeEnabled: Bool
    /// The `previews` preference.
    public var previews: Bool
    /// The `notifications_read_all` watermark, if any.
    public var readAllUntil: Timestamp?
    /// The `notifications_opened` watermark, if any.
    public var openedUntil: Timestamp?
    /// The user's active devices, ordered by token.
    public var devices: [RegisteredDevice]

    /// Creates a snapshot.
    public init(
        user: String, counts: Counts = .zero, badgeVersion: Int64 = 0, badgeEnabled: Bool = true,
        previews: Bool = true, readAllUntil: Timestamp? = nil, openedUntil: Timestamp? = nil,
        devices: [RegisteredDevice] = []
    ) {
        self.user = user
        self.counts = counts
        self.badgeVersion = badgeVersion
        self.badgeEnabled = badgeEnabled
        self.previews = previews
        self.readAllUntil = readAllUntil
        self.openedUntil = openedUntil
        self.devices = devices
    }

    /// The badge under `policy` (0 when the badge is disabled).
    public func badge(policy: BadgePolicy) -> Int {
        policy.badge(for: counts, badgeEnabled: badgeEnabled)
    }
}
