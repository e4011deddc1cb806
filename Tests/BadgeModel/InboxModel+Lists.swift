import BadgeCore
import BadgeWire

/// What the app's lists show (contract 7.2), as the model has it: the stored notifications and the conversations
/// with unread messages.
extension InboxModel {
    /// One stored notification of a user.
    public struct ListedNotification: Sendable, Equatable {
        public var id: String
        public var occurredAt: Timestamp
        public var read: Bool
        public var seen: Bool
    }

    /// One conversation with unread messages.
    public struct ListedConversation: Sendable, Equatable {
        public var conversationID: String
        public var unreadMessages: Int
        /// The latest unread message's time.
        public var lastMessageAt: Timestamp
    }

    /// The stored notifications of `user`, newest first: by `occurred_at`, then id (Swift string order), both
    /// descending.
    public func notifications(of user: String) -> [ListedNotification] {
        (users[user]?.notifications ?? [:]).map { id, stored in
            ListedNotification(id: id, occurredAt: stored.occurredAt, read: stored.read, seen: stored.seen)
        }.sorted { ($0.occurredAt, $0.id) > ($1.occurredAt, $1.id) }
    }

    /// The conversations of `user` with unread messages, latest first: by the latest unread message's time, then
    /// conversation id, both descending.
    public func unreadConversations(of user: String) -> [ListedConversation] {
        (users[user]?.messages ?? [:]).compactMap { conversation, messages in
            let unread = messages.filter { !$0.read }
            guard let last = unread.map(\.occurredAt).max() else { return nil }
            return ListedConversation(conversationID: conversation, unreadMessages: unread.count, lastMessageAt: last)
        }.sorted { ($0.lastMessageAt, $0.conversationID) > ($1.lastMessageAt, $1.conversationID) }
    }
}
