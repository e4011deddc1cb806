import BadgeCore
import BadgeWire

/// The outbox's columns and how a ``PlannedPush`` maps to them and back.
enum OutboxRow {
    static let insertColumns =
        "user_id, event_id, event_type, token, provider, topic, environment, kind, event_json, "
        + "unread_notifications, unseen_notifications, unread_messages, badge, badge_version, previews, partition_id, "
        + "created_at"

    /// ``insertColumns`` with the id first and the delivery state last (claim epoch, attempts, next attempt).
    static let selectColumns = "id, " + insertColumns + ", claimed_epoch, attempts, next_attempt_at"

    /// An empty row set with the columns of ``insertColumns``, for ``values(of:eventJSON:partition:createdAt:)`` rows.
    static func rowSet() -> SQLRowSet {
        SQLRowSet(
            [
                ("user_id", .text), ("event_id", .text), ("event_type", .text), ("token", .text), ("provider", .text),
                ("topic", .text), ("environment", .text), ("kind", .text), ("event_json", .text),
                ("unread_notifications", .int), ("unseen_notifications", .int), ("unread_messages", .int),
                ("badge", .int), ("badge_version", .int), ("previews", .bool), ("partition_id", .int),
                ("created_at", .int),
            ])
    }

    /// The values of ``insertColumns`` for `push`, planned at `createdAt` (microseconds since the epoch).
    static func values(of push: PlannedPush, eventJSON: String?, partition: Int?, createdAt: Int64) -> [SQLValue] {
        [
            .text(push.recipient), .text(push.eventID), .text(push.eventType.rawValue), .text(push.token),
            .text(push.provider.rawValue), .text(push.topic), .text(push.environment?.rawValue),
            .text(push.kind.isAlert ? "alert" : "badge"), push.kind.isAlert ? .text(eventJSON) : .null,
            .int(Int64(push.counts.unreadNotifications)), .int(Int64(push.counts.unseenNotifications)),
            .int(Int64(push.counts.unreadMessages)), .int(Int64(push.badge)), .int(push.badgeVersion),
            .bool(push.previews), .int(partition.map(Int64.init)), .int(createdAt),
        ]
    }

    /// Rebuilds a push from the columns named in ``selectColumns``.
    static func decode(_ row: SQLRow) throws -> OutboxPush {
        guard let id = try row["id"].int64, let recipient = try row["user_id"].string,
            let eventID = try row["event_id"].string,
            let eventType = try row["event_type"].string.flatMap(EventType.init(rawValue:)),
            let token = try row["token"].string,
            let provider = try row["provider"].string.flatMap(PushProvider.init(rawValue:)),
            let kindName = try row["kind"].string, let unreadNotifications = try row["unread_notifications"].int64,
            let unseenNotifications = try row["unseen_notifications"].int64,
            let unreadMessages = try row["unread_messages"].int64, let badge = try row["badge"].int64,
            let badgeVersion = try row["badge_version"].int64, let previews = try row["previews"].bool
        else { throw StoreError.corrupt("bad outbox row") }
        let environment: APNsEnvironment?
        if let name = try row["environment"].string {
            guard let value = APNsEnvironment(rawValue: name) else { throw StoreError.corrupt("bad environment") }
            environment = value
        } else {
            environment = nil
        }
        let kind: PushKind
        switch kindName {
        case "badge":
            kind = .badgeOnly
        case "alert":
            guard let text = try row["event_json"].string else {
                throw StoreError.corrupt("alert outbox row \(id) without event")
            }
            kind = .alert(try decodeEvent(text, outboxID: id))
        default:
            throw StoreError.corrupt("bad outbox kind \(kindName)")
        }
        let push = PlannedPush(
            recipient: recipient, eventID: eventID, eventType: eventType, token: token, provider: provider,
            topic: try row["topic"].string, environment: environment, kind: kind,
            counts: Counts(
                unreadNotifications: Int(unreadNotifications), unseenNotifications: Int(unseenNotifications),
                unreadMessages: Int(unreadMessages)),
            badge: Int(badge), badgeVersion: badgeVersion, previews: previews)
        return OutboxPush(
            id: id, push: push, claimedEpoch: try row["claimed_epoch"].int64,
            attempts: Int(try row["attempts"].int64 ?? 0), createdAt: try row["created_at"].int64 ?? 0,
            nextAttemptAt: try row["next_attempt_at"].int64 ?? 0)
    }

    private static func decodeEvent(_ text: String, outboxID: Int64) throws -> Event {
        let json: JSONValue
        do {
            json = try JSONValue.parse(text)
        } catch {
            throw StoreError.corrupt("outbox row \(outboxID): event is not JSON: \(error)")
        }
        switch EventDecoder.decode(json: json) {
        case .success(let event): return event
        case .failure(let error): throw StoreError.corrupt("outbox row \(outboxID): bad event: \(error)")
        }
    }
}
