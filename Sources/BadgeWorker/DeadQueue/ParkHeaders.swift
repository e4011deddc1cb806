import AMQPClient
import BadgeWire

/// The headers of a message parked in `badgepipe.dead`: why it was parked, in words and as a bounded class, when,
/// and where it was going. The worker writes them (``stamped(_:routingKey:reason:error:at:)``); `badgepipe dead`
/// reads them back (``ParkedMessage``) and removes them again when it replays the message
/// (``replayProperties(_:)``).
public enum ParkHeaders {
    /// One line for people: the decoder's or the database's message (the contract's `x-badgepipe-error`).
    public static let error = Topology.errorHeader
    /// The reason's bounded class, the label `badgepipe_events_parked_total{reason}` counts it under: the decoder's
    /// code (`unknown_type`, `invalid_json`, `too_large`, …) or `refused_by_database`.
    public static let reason = "x-badgepipe-reason"
    /// When the worker parked it: RFC 3339 in UTC with milliseconds, by the worker's clock.
    public static let parkedAt = "x-badgepipe-parked-at"
    /// The routing key the message was published with (its recipient): where a replay sends it.
    public static let originalRoutingKey = "x-badgepipe-original-routing-key"

    /// The most characters of an error kept in ``error``.
    static let maxErrorLength = 1000

    /// Headers the broker adds when it dead-letters or redelivers a message, and the client's own publish tag:
    /// they describe this message's past in the broker, not the event, and are dropped on replay.
    static let brokerHeaders: Set<String> = [
        "x-death", "x-first-death-exchange", "x-first-death-queue", "x-first-death-reason", "x-last-death-exchange",
        "x-last-death-queue", "x-last-death-reason", "x-delivery-count", AMQPProperties.publishTagHeader,
    ]

    /// `properties` with the park headers set (earlier ones replaced): `error` on one line and at most
    /// 1,000 characters, `reason` as given (a bounded class), the time, and the routing key it was published with.
    public static func stamped(
        _ properties: AMQPProperties, routingKey: String, reason: String, error: String, at time: Timestamp
    ) -> AMQPProperties {
        var stamped = properties
        var headers = properties.headers ?? [:]
        headers[Self.error] = .string(String(error.prefix(maxErrorLength)).replacingNewlines())
        headers[Self.reason] = .string(reason)
        headers[Self.parkedAt] = .string(time.rfc3339Milliseconds)
        headers[Self.originalRoutingKey] = .string(routingKey)
        stamped.headers = headers
        return stamped
    }

    /// A parked message's properties as its producer published them: without the park headers (every
    /// `x-badgepipe-` one) and without what the broker and the client added since (``brokerHeaders``).
    public static func replayProperties(_ properties: AMQPProperties) -> AMQPProperties {
        var original = properties
        let kept = (properties.headers ?? [:]).filter { name, _ in
            !name.hasPrefix("x-badgepipe-") && !brokerHeaders.contains(name)
        }
        original.headers = kept.isEmpty ? nil : kept
        return original
    }
}
