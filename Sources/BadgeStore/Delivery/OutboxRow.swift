import BadgeCore

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

    /// Rebuilds a push from the cells of ``selectColumns``.
    static func decode(_ cells: [SQLValue]) throws -> OutboxPush {
        guard cells.count == 21, let id = cells[0].int64, let recipient = cells[1].string,
            let eventID = cells[2].string, let eventType = cells[3].string.flatMap(EventType.init(rawValue:)),
            let token = cells[4].string, let provider = cells[5].string.flatMap(PushProvider.init(rawValue:)),
            let kindName = cells[8].string, let unreadNotifications = cells[10].int64,
            let unseenNotifications = cells[11].int64, let unreadMessages = cells[12].int64,
            let badge = cells[13].int64, let badgeVersion = cells[14].int64, let previews = cells[15].bool
        else { throw StoreError.corrupt("bad outbox row") }
        let environment: APNsEnvironment?
        if let name = cells[7].string {
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
            guard let text = cells[9].string else { throw StoreError.corrupt("alert outbox row \(id) without event") }
            kind = .alert(try decodeEvent(text, outboxID: id))
        default:
            throw StoreError.corrupt("bad outbox kind \(kindName)")
        }
        let push = PlannedPush(
            recipient: recipient, eventID: eventID, eventType: eventType, token: token, provider: provider,
            topic: cells[6].string, environment: environment, kind: kind,
            counts: Counts(
                unreadNotifications: Int(unreadNotifications), unseenNotifications: Int(unseenNotifications),
                unreadMessages: Int(unreadMessages)),
            badge: Int(badge), badgeVersion: badgeVersion, previews: previews)
        return OutboxPush(
            id: id, push: push, claimedEpoch: cells[18].int64, attempts: Int(cells[19].int64 ?? 0),
            createdAt: cells[17].int64 ?? 0, nextAttemptAt: cells[20].int64 ?? 0)
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
