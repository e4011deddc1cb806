import BadgeSupport
import Foundation

/// What one device shows, as the sink saw its pushes (`GET /devices/{token}`).
public struct SinkDevice: Decodable, Sendable, Equatable {
    public var token: String
    /// `apns` or `fcm`.
    public var provider: String
    public var topic: String?
    /// `production` or `sandbox` (APNs), nil for FCM.
    public var environment: String?
    /// The badge of the last accepted push that carried one; nil before any.
    public var badge: Int?
    public var badgeVersion: Int?
    /// The counts of the last accepted push (`unread_notifications`, `unseen_notifications`, `unread_messages`).
    public var counts: [String: Int]
    public var lastAlert: SinkAlert?
    /// Accepted alerts.
    public var alerts: Int
    /// Accepted badge-only pushes.
    public var badgeOnly: Int
    /// Every push, accepted or not.
    public var pushes: Int
    /// Pushes the sink refused (a fault).
    public var failed: Int
    /// The `seq` of the device's last push (for `after:` in a later wait).
    public var lastSeq: Int
    public var lastStatus: Int

    enum CodingKeys: String, CodingKey {
        case token, provider, topic, environment, badge, counts, alerts, pushes, failed
        case badgeVersion = "badge_version"
        case lastAlert = "last_alert"
        case badgeOnly = "badge_only"
        case lastSeq = "last_seq"
        case lastStatus = "last_status"
    }
}

/// An alert as a device's lock screen shows it.
public struct SinkAlert: Decodable, Sendable, Equatable {
    public var seq: Int
    public var title: String?
    public var body: String?
    /// The alert's thread (`thread-id`).
    public var thread: String?
    /// The event type that made it (`follow`, `comment`, …).
    public var type: String?
}

/// One push the sink recorded (`GET /deliveries`).
public struct SinkDelivery: Decodable, Sendable, Equatable {
    /// Its place in the sink's log: increasing, never reused.
    public var seq: Int
    public var provider: String
    public var token: String
    /// The request's headers (lower-case names); `authorization` is an object that says what the sink verified.
    public var headers: [String: SinkJSON]
    /// The request's body: the APNs payload, or the FCM message.
    public var payload: SinkJSON
    /// The status the sink answered (200, or a fault's).
    public var status: Int
    public var reason: String?

    /// The value of the header `name` (lower case), when it is text.
    public func header(_ name: String) -> String? { headers[name]?.string }

    /// The APNs payload of the push: the body of an APNs push, `message.apns.payload` of an FCM message.
    public var apnsPayload: SinkJSON {
        provider == "fcm" ? payload["message"]["apns"]["payload"] : payload
    }

    /// The badge the push carried, if any.
    public var badge: Int? { apnsPayload["aps"]["badge"].int }

    /// Whether the push carried an alert (else it only set the badge).
    public var isAlert: Bool { apnsPayload["aps"]["alert"] != .null }
}

/// Which recorded pushes ``SinkClient/deliveries(_:)`` returns; every field left nil keeps all.
public struct SinkDeliveryFilter: Sendable, Equatable {
    public var tokens: [String]?
    /// Only pushes after this `seq`.
    public var after: Int?
    public var limit: Int?
    /// `apns` or `fcm`.
    public var provider: String?
    public var statuses: [Int]?
    /// The event type (`follow`, `comment`, …).
    public var type: String?
    /// Alerts only (true), badge-only pushes only (false).
    public var alerts: Bool?
    /// Text the push's body contains.
    public var text: String?

    public init(
        tokens: [String]? = nil, after: Int? = nil, limit: Int? = nil, provider: String? = nil,
        statuses: [Int]? = nil, type: String? = nil, alerts: Bool? = nil, text: String? = nil
    ) {
        (self.tokens, self.after, self.limit, self.provider) = (tokens, after, limit, provider)
        (self.statuses, self.type, self.alerts, self.text) = (statuses, type, alerts, text)
    }

    /// The query string (with its `?`, empty for no filter), with `extra` items after the filter's.
    func query(extra: [String]) -> String {
        var items: [String] = []
        for token in tokens ?? [] { items.append("token=\(SinkClient.escaped(token))") }
        if let after { items.append("after=\(after)") }
        if let limit { items.append("limit=\(limit)") }
        if let provider { items.append("provider=\(SinkClient.escaped(provider))") }
        for status in statuses ?? [] { items.append("status=\(status)") }
        if let type { items.append("type=\(SinkClient.escaped(type))") }
        if let alerts { items.append("kind=\(alerts ? "alert" : "badge_only")") }
        if let text { items.append("text=\(SinkClient.escaped(text))") }
        items += extra
        return items.isEmpty ? "" : "?" + items.joined(separator: "&")
    }
}

/// A fault the sink plays (`POST /faults`): pushes (to `token`, or any) are answered with `status` and `reason`,
/// after `delayMilliseconds`, or the connection is cut (`connection`: `close` or `goaway`); `times` times (for ever
/// when nil), or for a share `rate` of the pushes.
public struct SinkFault: Encodable, Sendable, Equatable {
    public var token: String?
    public var status: Int?
    public var reason: String?
    public var times: Int?
    public var rate: Double?
    public var delayMilliseconds: Int?
    public var connection: String?

    public init(
        token: String? = nil, status: Int? = nil, reason: String? = nil, times: Int? = nil, rate: Double? = nil,
        delayMilliseconds: Int? = nil, connection: String? = nil
    ) {
        (self.token, self.status, self.reason, self.times) = (token, status, reason, times)
        (self.rate, self.delayMilliseconds, self.connection) = (rate, delayMilliseconds, connection)
    }

    enum CodingKeys: String, CodingKey {
        case token, status, reason, times, rate, connection
        case delayMilliseconds = "delay_ms"
    }
}

/// A failure of ``SinkClient``: a struct with a ``Code``, as every error of BadgePipe.
public struct SinkClientError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, machine-readable.
    public typealias Code = ErrorCode<SinkClientError>

    public var code: Code
    public var message: String
    /// The device as it was when a badge wait timed out.
    public var device: SinkDevice?
    /// The matching pushes there were when a deliveries wait timed out.
    public var deliveries: [SinkDelivery]?

    public init(code: Code, message: String, device: SinkDevice? = nil, deliveries: [SinkDelivery]? = nil) {
        (self.code, self.message, self.device, self.deliveries) = (code, message, device, deliveries)
    }

    public var description: String { "\(code): \(message)" }
}

/// A JSON value of a recorded push's body; a missing key or index reads as `.null`.
public enum SinkJSON: Decodable, Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([SinkJSON])
    case object([String: SinkJSON])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([SinkJSON].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: SinkJSON].self))
        }
    }

    public subscript(key: String) -> SinkJSON {
        if case .object(let members) = self { return members[key] ?? .null }
        return .null
    }

    public subscript(index: Int) -> SinkJSON {
        if case .array(let items) = self, items.indices.contains(index) { return items[index] }
        return .null
    }

    public var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    public var int: Int? {
        if case .number(let value) = self, value.rounded() == value, abs(value) < 9e15 { return Int(value) }
        return nil
    }
}

extension ErrorCode<SinkClientError> {
    /// The wait ended before its condition held (``SinkClientError/device`` or ``deliveries`` say what there
    /// was).
    public static var timeout: Self { Self("timeout") }
    /// The sink could not be reached.
    public static var unreachable: Self { Self("unreachable") }
    /// The sink answered with a status or a body the client did not expect.
    public static var unexpectedAnswer: Self { Self("unexpected_answer") }
}
