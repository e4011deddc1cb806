import Foundation

/// A user's counts (contract 7.2): the same at a `badgeVersion` as every push built at it.
public struct BadgeCounts: Codable, Sendable, Equatable {
    public var unreadNotifications: Int
    public var unseenNotifications: Int
    public var unreadMessages: Int
    /// The number on the app icon.
    public var badge: Int
    /// Orders every count the app sees, the pushes' included.
    public var badgeVersion: Int64

    enum CodingKeys: String, CodingKey {
        case unreadNotifications = "unread_notifications"
        case unseenNotifications = "unseen_notifications"
        case unreadMessages = "unread_messages"
        case badge
        case badgeVersion = "badge_version"
    }
}

/// One notification of the list.
public struct BadgeNotification: Codable, Sendable, Equatable {
    public struct Actor: Codable, Sendable, Equatable {
        public var id: String
        public var name: String
        public var username: String?
    }

    public var id: String
    public var type: String?
    public var occurredAt: String
    public var read: Bool
    public var seen: Bool
    public var actor: Actor?
    public var postID: String?
    public var commentID: String?
    public var conversationID: String?
    public var title: String?
    public var text: String?

    enum CodingKeys: String, CodingKey {
        case id, type, read, seen, actor, title, text
        case occurredAt = "occurred_at"
        case postID = "post_id"
        case commentID = "comment_id"
        case conversationID = "conversation_id"
    }
}

/// One page of notifications, newest first.
public struct NotificationPage: Codable, Sendable, Equatable {
    public var notifications: [BadgeNotification]
    /// The next page's `before`; nil at the end.
    public var next: String?
    public var counts: BadgeCounts
}

/// A request the API refused (or that did not reach it): its HTTP status (0 when there was none) and body.
public struct BadgePipeClientError: Error, Sendable, CustomStringConvertible {
    public var status: Int
    public var body: Data

    public var description: String { "HTTP \(status): \(String(decoding: body, as: UTF8.self))" }
}
