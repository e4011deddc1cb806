import AMQPClient
import BadgeWire

/// A message of `badgepipe.dead` as `badgepipe dead` shows it: where it stands in the queue, what it is, why and
/// when it was parked, and where a replay would send it.
///
/// It reads messages the worker parked (``ParkHeaders``), those parked by workers from before the
/// `x-badgepipe-reason` and `x-badgepipe-parked-at` headers (the class is then read from the error's
/// `code: message` form), and those the broker dead-lettered itself (from a partition queue past its delivery
/// limit: the `x-death` header says why, when, and with which routing key).
public struct ParkedMessage: Sendable {
    /// The place in the queue when it was read, from 1 (the oldest). Replaying messages ahead moves it.
    public var position: Int
    /// The body, as published.
    public var body: [UInt8]
    /// The properties, park headers included.
    public var properties: AMQPProperties
    /// The routing key it was delivered from the dead queue with.
    public var routingKey: String
    /// The exchange it was delivered from the dead queue through (empty when the worker parked it directly).
    public var exchange: String

    /// The `message_id` property.
    public var messageID: String? { properties.messageID }
    /// The event's `id`, when the body is a JSON object that has one.
    public let eventID: String?
    /// The event's `type`, when the body is a JSON object that has one (`unknown_type` included).
    public let eventType: String?
    /// The event's `occurred_at`, when its body is an event that says it.
    public let occurredAt: Timestamp?
    /// The bounded class of why it was parked (see ``reason(headers:)``).
    public let reason: String
    /// The one-line reason, when the worker gave one (`x-badgepipe-error`).
    public var error: String? { header(ParkHeaders.error) }
    /// When it was parked: the worker's `x-badgepipe-parked-at`, or the broker's time in `x-death`; nil for
    /// messages parked before that header existed.
    public let parkedAt: Timestamp?
    /// The routing key it was first published with, where a replay sends it; nil when nothing tells.
    public let originalRoutingKey: String?

    /// Times the dead queue handed this message out before without an ack (`x-delivery-count`, which quorum
    /// queues count: each `badgepipe dead list` adds one).
    public var deliveryCount: Int? { properties.headers?["x-delivery-count"]?.intValue }

    /// Reads a message at `position` of the queue.
    public init(position: Int, body: [UInt8], properties: AMQPProperties, exchange: String, routingKey: String) {
        self.position = position
        self.body = body
        self.properties = properties
        self.exchange = exchange
        self.routingKey = routingKey
        let headers = properties.headers ?? [:]
        let death = Self.lastDeath(headers)
        let event = Self.eventFields(body)
        eventID = event.id
        eventType = event.type
        occurredAt = event.occurredAt
        reason = Self.reason(headers: headers)
        if let text = headers[ParkHeaders.parkedAt]?.stringValue, let time = Timestamp.parse(text) {
            parkedAt = time
        } else if case .timestamp(let seconds)? = death?["time"], let value = Int64(exactly: seconds) {
            parkedAt = Timestamp(microsecondsSinceEpoch: value * 1_000_000)
        } else {
            parkedAt = nil
        }
        if let key = headers[ParkHeaders.originalRoutingKey]?.stringValue {
            originalRoutingKey = key
        } else if case .array(let keys)? = death?["routing-keys"], let key = keys.first?.stringValue {
            originalRoutingKey = key
        } else {
            // Dead-lettered through the fanout exchange, a message keeps its routing key; one published to the
            // queue by name (the default exchange) carries the queue's name instead, which says nothing.
            originalRoutingKey = exchange.isEmpty ? nil : routingKey
        }
    }

    /// Reads a message received from the dead queue at `position`.
    public init(position: Int, message: AMQPMessage) {
        self.init(
            position: position, body: message.body, properties: message.properties, exchange: message.exchange,
            routingKey: message.routingKey)
    }

    /// The message id, else the event id, else `-`: how the tables name a message.
    public var displayID: String { messageID ?? eventID ?? "-" }

    /// Whether `id` names this message: its message id or its event id.
    public func isNamed(_ id: String) -> Bool { messageID == id || eventID == id }

    /// The properties a replay publishes it with: as its producer published them (``ParkHeaders/replayProperties(_:)``).
    public var replayProperties: AMQPProperties { ParkHeaders.replayProperties(properties) }

    private func header(_ name: String) -> String? { properties.headers?[name]?.stringValue }

    /// The bounded class of why a message was parked: `x-badgepipe-reason` when present; else, from an older
    /// worker's `x-badgepipe-error`, the code before its first `:` (`unknown_type: unknown type "like"`) or
    /// `refused_by_database`; else, for a message the broker dead-lettered, the `x-death` reason
    /// (`delivery_limit`, `rejected`, `expired`, `maxlen`); else `unclassified`.
    public static func reason(headers: AMQPTable) -> String {
        if let reason = headers[ParkHeaders.reason]?.stringValue, !reason.isEmpty { return reason }
        if let error = headers[ParkHeaders.error]?.stringValue {
            if error.hasPrefix("refused by the database") { return "refused_by_database" }
            if let colon = error.firstIndex(of: ":") {
                let code = error[..<colon]
                if !code.isEmpty, code.allSatisfy({ ("a"..."z").contains($0) || $0 == "_" }) { return String(code) }
            }
            return "unclassified"
        }
        if let reason = lastDeath(headers)?["reason"]?.stringValue, !reason.isEmpty { return reason }
        return "unclassified"
    }

    /// The most recent entry of the broker's `x-death` header (it puts the latest first).
    private static func lastDeath(_ headers: AMQPTable) -> AMQPTable? {
        guard case .array(let deaths)? = headers["x-death"], case .table(let last)? = deaths.first else {
            return nil
        }
        return last
    }

    /// The `id` and `type` of a body that is a JSON object.
    private static func eventFields(_ body: [UInt8]) -> (id: String?, type: String?, occurredAt: Timestamp?) {
        guard body.first(where: { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }) == UInt8(ascii: "{"),
            let json = try? JSONValue.parse(body)
        else { return (nil, nil, nil) }
        return (
            json["id"]?.stringValue, json["type"]?.stringValue,
            json["occurred_at"]?.stringValue.flatMap(Timestamp.parse)
        )
    }

    /// How old the message is for replaying it, at `now` (`badgepipe dead replay` leaves it when that is over the
    /// idempotency window, the workers' retention age).
    ///
    /// What bounds the lifetime of the records that make a replay harmless is the event's `occurred_at`: the
    /// event's processed id and a read tombstone for its notification live for the retention age from when a worker
    /// recorded them, by the database's clock, and a worker records them only once the event occurred (it applies
    /// a copy of the event, or a read of what it notified). So while the event occurred less than the window ago,
    /// both are still there, whenever they were made; past it either may be gone, and the event, replayed, could
    /// take effect a second time, or bring back unread a notification that was read before it arrived. The parked
    /// time (`x-badgepipe-parked-at`, or the broker's `x-death` time) counts when it is earlier (a producer whose
    /// clock ran ahead) or the body has no `occurred_at`; the AMQP `timestamp` property, which only a producer sets
    /// and which is never earlier than the event, counts only when neither is known. Nil when nothing tells: such a
    /// message is replayed.
    public func age(at now: Timestamp) -> Duration? {
        var oldest = [parkedAt, occurredAt].compactMap { $0?.microsecondsSinceEpoch }.min()
        if oldest == nil, let seconds = properties.timestamp, let value = Int64(exactly: seconds),
            value <= Int64.max / 1_000_000
        {
            oldest = value * 1_000_000
        }
        return oldest.map { .microseconds(now.microsecondsSinceEpoch - $0) }
    }
}
