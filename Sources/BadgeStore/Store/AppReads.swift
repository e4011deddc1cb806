import BadgeCore

/// A user's counts as the app's API shows them (contract 7.2): the counts, the badge and the `badge_version` read
/// from one `users` row, the badge computed by the same function as every push's (``BadgeCore/BadgePolicy``).
/// So the counts shown at version v are those of every push built at v (guarantee 9).
public struct UserCounts: Sendable, Equatable, Hashable {
    /// The user's counts.
    public var counts: Counts
    /// The badge under the deployment's policy and the user's `badge_enabled`.
    public var badge: Int
    /// The version of these counts: the `badge_version` of the pushes built from them.
    public var badgeVersion: Int64

    /// Counts, badge and version as given.
    public init(counts: Counts, badge: Int, badgeVersion: Int64) {
        self.counts = counts
        self.badge = badge
        self.badgeVersion = badgeVersion
    }

    /// A user the store has never seen: everything 0.
    public static let zero = UserCounts(counts: .zero, badge: 0, badgeVersion: 0)
}

/// One stored notification, as the app's list shows it (contract 7.2).
public struct StoredNotification: Sendable, Equatable {
    /// The notification's id (its event's `id`).
    public var id: String
    /// When it occurred (its event's `occurred_at`), in microseconds since the epoch.
    public var occurredAt: Int64
    public var read: Bool
    public var seen: Bool
    /// Its event's JSON as it was applied, for the list's `type`, `actor`, `post_id` and the like; nil for a
    /// notification stored before the store kept it.
    public var eventJSON: String?
    /// When it was stored, by the database's clock (microseconds since the epoch; SQLite's clock counts
    /// milliseconds): the stream's order of new notifications. Every notification of one batch has the same; one
    /// stored later for the same user never has an earlier one (the batch holds the user's row until it commits),
    /// unless the database's clock is set back, but it may have an equal one. 0 for a notification stored before
    /// the store kept it, or by an older badgepipe against this schema.
    public var storedAt: Int64

    public init(id: String, occurredAt: Int64, read: Bool, seen: Bool, eventJSON: String?, storedAt: Int64) {
        self.id = id
        self.occurredAt = occurredAt
        self.read = read
        self.seen = seen
        self.eventJSON = eventJSON
        self.storedAt = storedAt
    }
}

/// Where a page of notifications ends: the last one's `occurred_at` and `id`. The next page holds the
/// notifications strictly after it in the list's order (newest first: by `occurred_at`, then `id`, both
/// descending), so a page never repeats or skips one while new ones arrive.
public struct NotificationCursor: Sendable, Equatable, Hashable {
    public var occurredAt: Int64
    public var id: String

    public init(occurredAt: Int64, id: String) {
        self.occurredAt = occurredAt
        self.id = id
    }
}

/// One page of a user's notifications, newest first.
public struct NotificationPage: Sendable, Equatable {
    public var notifications: [StoredNotification]
    /// Where the next page starts; nil when this page is the last.
    public var next: NotificationCursor?

    public init(notifications: [StoredNotification], next: NotificationCursor?) {
        self.notifications = notifications
        self.next = next
    }
}

/// A conversation with unread messages (contract 7.2).
public struct ConversationSummary: Sendable, Equatable {
    public var conversationID: String
    public var unreadMessages: Int
    /// The latest unread message's `occurred_at`, in microseconds since the epoch.
    public var lastMessageAt: Int64

    public init(conversationID: String, unreadMessages: Int, lastMessageAt: Int64) {
        self.conversationID = conversationID
        self.unreadMessages = unreadMessages
        self.lastMessageAt = lastMessageAt
    }
}

/// Where a page of conversations ends: the last one's `last_message_at` and id (latest first, both descending).
public struct ConversationCursor: Sendable, Equatable, Hashable {
    public var lastMessageAt: Int64
    public var conversationID: String

    public init(lastMessageAt: Int64, conversationID: String) {
        self.lastMessageAt = lastMessageAt
        self.conversationID = conversationID
    }
}

/// One page of a user's conversations with unread messages, latest first.
public struct ConversationPage: Sendable, Equatable {
    public var conversations: [ConversationSummary]
    public var next: ConversationCursor?

    public init(conversations: [ConversationSummary], next: ConversationCursor?) {
        self.conversations = conversations
        self.next = next
    }
}

/// What the app's API (`badgepipe api`) reads of the store: read-only, one statement each, never a write. Every
/// change goes through the broker as an event, like any producer's.
public protocol AppReads: Sendable {
    /// The current counts of each of `users` (``UserCounts/zero`` for a user the store has never seen), the badge
    /// under `policy`. One statement however many users; a user named twice is read once. More than
    /// ``AppReadLimits/usersPerRead`` distinct users fail with `too_many_users` (not transient). With no user it
    /// still asks the database (a readiness check) and returns nothing.
    func userCounts(_ users: [String], policy: BadgePolicy) async throws -> [String: UserCounts]

    /// Up to `limit` (clamped to 1...``AppReadLimits/pageSize``) of `user`'s notifications, newest first by
    /// (`occurred_at`, `id`), strictly after `before` when given; with `unreadOnly`, only those not read. Read over
    /// an index of the user's notifications by time from the cursor on, so a page costs its rows. With
    /// `unreadOnly`, PostgreSQL reads the index of the unread ones; SQLite reads the same index as the whole list
    /// and passes over the read ones between the cursor and the page's end.
    func notifications(
        of user: String, limit: Int, before: NotificationCursor?, unreadOnly: Bool
    ) async throws -> NotificationPage

    /// Up to `limit` (clamped to 1...``AppReadLimits/pageSize``) of `user`'s unread notifications whose
    /// ``StoredNotification/storedAt`` is after `storedAfter`, by (`stored_at`, `id`): what a live stream announces.
    /// `stored_at` is not unique (see ``StoredNotification/storedAt``): a reader going on from the newest it saw asks
    /// from a little before it and leaves out the ids it already has. Those stored before the store kept the time
    /// (0) are never returned.
    func unreadNotifications(of user: String, storedAfter: Int64, limit: Int) async throws -> [StoredNotification]

    /// ``unreadNotifications(of:storedAfter:limit:)`` for many users (at most ``AppReadLimits/usersPerRead``), each
    /// after its own `stored_at`, in one statement: the users are the keys of `since`; a user with none is absent
    /// from the answer.
    func unreadNotifications(since: [String: Int64], limit: Int) async throws -> [String: [StoredNotification]]

    /// Up to `limit` (clamped to 1...``AppReadLimits/pageSize``) of `user`'s conversations with unread messages,
    /// latest first by (`last_message_at`, `conversation_id`), strictly after `before` when given.
    ///
    /// Cost: it groups every unread message of the user by conversation (over the index of unread messages by user
    /// and conversation) before it takes a page, so each page costs the user's unread messages, however many
    /// conversations it returns. A conversation whose unread messages change between pages moves: one with a
    /// newer message goes before the cursor (not shown again), one read leaves the list.
    func conversations(of user: String, limit: Int, before: ConversationCursor?) async throws -> ConversationPage
}

/// The bounds of ``AppReads``.
public enum AppReadLimits {
    /// The most items of one page.
    public static let pageSize = 100
    /// The most users of one ``AppReads/userCounts(_:policy:)``.
    public static let usersPerRead = 1_000
}
