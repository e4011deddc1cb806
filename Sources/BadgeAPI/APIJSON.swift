import BadgeCore
import BadgeStore
import BadgeWire
import Foundation

/// The JSON the API answers with (contract 7.2), written with BadgeWire's `JSONValue`.
enum APIJSON {
    /// `{"unread_notifications", "unseen_notifications", "unread_messages", "badge", "badge_version"}`.
    static func counts(_ counts: UserCounts) -> JSONValue {
        .object([
            (key: "unread_notifications", value: .int(Int64(counts.counts.unreadNotifications))),
            (key: "unseen_notifications", value: .int(Int64(counts.counts.unseenNotifications))),
            (key: "unread_messages", value: .int(Int64(counts.counts.unreadMessages))),
            (key: "badge", value: .int(Int64(counts.badge))),
            (key: "badge_version", value: .int(counts.badgeVersion)),
        ])
    }

    /// The event fields a notification shows, when its event names them.
    static let eventFields = ["actor", "post_id", "comment_id", "conversation_id", "title", "text"]

    /// `{"id", "type", "occurred_at", "read", "seen", "actor"?, "post_id"?, "comment_id"?, "conversation_id"?,
    /// "title"?, "text"?}` from the stored notification and its event.
    static func notification(_ notification: StoredNotification) -> JSONValue {
        let event = notification.eventJSON.flatMap { try? JSONValue.parse(Array($0.utf8)) }
        var members: [(key: String, value: JSONValue)] = [
            (key: "id", value: .string(notification.id)),
            (key: "type", value: event?["type"] ?? .null),
            (
                key: "occurred_at",
                value: .string(Timestamp(microsecondsSinceEpoch: notification.occurredAt).rfc3339Milliseconds)
            ),
            (key: "read", value: .bool(notification.read)),
            (key: "seen", value: .bool(notification.seen)),
        ]
        for field in eventFields {
            if let value = event?[field], !value.isNull { members.append((key: field, value: value)) }
        }
        return .object(members)
    }

    /// `{"conversation_id", "unread_messages", "last_message_at"}`.
    static func conversation(_ conversation: ConversationSummary) -> JSONValue {
        .object([
            (key: "conversation_id", value: .string(conversation.conversationID)),
            (key: "unread_messages", value: .int(Int64(conversation.unreadMessages))),
            (
                key: "last_message_at",
                value: .string(Timestamp(microsecondsSinceEpoch: conversation.lastMessageAt).rfc3339Milliseconds)
            ),
        ])
    }

    /// An error body: `{"error", "message"}`.
    static func error(_ code: String, _ message: String) -> JSONValue {
        .object([(key: "error", value: .string(code)), (key: "message", value: .string(message))])
    }
}

/// The opaque cursors of the API's pages: base64url of `<microseconds>:<id>`, where the id is the last item's
/// (a notification's id, a conversation's id). A cursor names a position, not a snapshot: it stays valid while new
/// items arrive, and a page after it neither repeats nor skips one.
enum Cursor {
    static func encode(_ microseconds: Int64, _ id: String) -> String {
        let text = "\(microseconds):\(id)"
        return Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// The position a cursor names; throws `400` for one the API did not write.
    static func decode(_ cursor: String) throws -> (microseconds: Int64, id: String) {
        var base64 = cursor.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard cursor.utf8.count <= 1024, let data = Data(base64Encoded: base64),
            let text = String(data: data, encoding: .utf8), let colon = text.firstIndex(of: ":"),
            let microseconds = Int64(text[..<colon])
        else { throw APIError.badRequest("the cursor is not one this API wrote") }
        return (microseconds, String(text[text.index(after: colon)...]))
    }
}
