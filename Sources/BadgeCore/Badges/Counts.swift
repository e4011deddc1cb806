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
