import BadgeWire

/// An error, a delay or a broken connection that the sink answers matching pushes with, set up through
/// `POST /faults`.
///
/// A fault matches a push to ``token`` (or every push when ``token`` is nil). It fires ``times`` times and then
/// expires, or for a random fraction ``rate`` of the matching pushes, or both, or on every matching push when
/// neither is given; without a `rate` it is deterministic. When it fires, the push is recorded, then the sink
/// waits ``delayMilliseconds``, then either breaks the connection (``connection``) or answers with ``status``
/// (200 when only a delay is set). Status and reason are APNs-style; FCM pushes get them translated (410 → 404
/// `UNREGISTERED`, 400 → `INVALID_ARGUMENT`, 429 → `QUOTA_EXCEEDED`, 5xx → `UNAVAILABLE`).
public struct Fault: Sendable, Equatable {
    /// How a connection-level fault breaks the connection a push came on.
    public enum Connection: String, Sendable, Equatable, CaseIterable {
        /// The connection is closed before any answer is written.
        case close
        /// HTTP/2: a `GOAWAY` frame that does not cover the push's stream (the client must retry it elsewhere),
        /// then the connection is closed. Over HTTP/1.1, the same as ``close``.
        case goaway
    }

    /// The longest delay a fault may add, in milliseconds (one minute).
    public static let maximumDelayMilliseconds = 60_000

    /// The device token it applies to; nil for every token.
    public let token: String?
    /// The HTTP status to answer with, 400–599; nil when the fault only delays or breaks the connection.
    public let status: Int?
    /// The APNs reason, such as `Unregistered`; nil exactly when ``status`` is.
    public let reason: String?
    /// How many more pushes it fires for before it expires; nil for no limit.
    public let times: Int?
    /// The probability, 0–1, that it fires for a matching push; nil for always.
    public let rate: Double?
    /// Milliseconds the sink waits before answering (or breaking the connection); nil for none.
    public let delayMilliseconds: Int?
    /// When set, the connection is broken instead of answering.
    public let connection: Connection?

    /// Creates a fault, validating it.
    /// - Parameters:
    ///   - token: The device token it applies to; nil for every token. Must not be empty.
    ///   - status: The HTTP status to answer with, 400–599; nil for none (then a delay or a connection fault is
    ///     required).
    ///   - reason: The APNs reason; nil for the usual reason of `status` (410 → `Unregistered`, …).
    ///   - times: How many pushes it fires for, at least 1; nil for no limit.
    ///   - rate: The probability, 0–1, that it fires for each matching push; nil for always.
    ///   - delayMilliseconds: The delay before answering, 0 to ``maximumDelayMilliseconds``; nil for none.
    ///   - connection: Break the connection instead of answering; nil to answer.
    /// - Throws: ``SinkError`` with code `invalid_fault` when a value is out of range.
    public init(
        token: String? = nil,
        status: Int? = nil,
        reason: String? = nil,
        times: Int? = nil,
        rate: Double? = nil,
        delayMilliseconds: Int? = nil,
        connection: Connection? = nil
    ) throws(SinkError) {
        if let token, token.isEmpty {
            throw .invalidFault("`token` must not be empty")
        }
        if let status, !(400...599).contains(status) {
            throw .invalidFault("`status` must be an integer from 400 to 599, got \(status)")
        }
        if let reason, reason.isEmpty || reason.utf8.count > 256 {
            throw .invalidFault("`reason` must be 1 to 256 bytes long")
        }
        if reason != nil, status == nil {
            throw .invalidFault("`reason` needs a `status`")
        }
        if let times, times < 1 {
            throw .invalidFault("`times` must be at least 1, got \(times)")
        }
        if let rate, !(rate >= 0 && rate <= 1) {
            throw .invalidFault("`rate` must be from 0.0 to 1.0, got \(rate)")
        }
        if let delayMilliseconds, !(0...Self.maximumDelayMilliseconds).contains(delayMilliseconds) {
            throw .invalidFault(
                "`delay_ms` must be from 0 to \(Self.maximumDelayMilliseconds), got \(delayMilliseconds)")
        }
        if status == nil, delayMilliseconds == nil, connection == nil {
            throw .invalidFault("give a `status`, a `delay_ms` or a `connection`")
        }
        if status != nil, connection != nil {
            throw .invalidFault("`status` and `connection` exclude each other: a broken connection has no status")
        }
        self.token = token
        self.status = status
        self.reason = status.map { reason ?? Self.defaultReason(status: $0) }
        self.times = times
        self.rate = rate
        self.delayMilliseconds = delayMilliseconds
        self.connection = connection
    }

    /// The fault with `times` replaced by the count still to fire.
    func with(remaining: Int?) -> Fault {
        // Values are already valid; copy without re-validating.
        Fault(copying: self, times: remaining)
    }

    private init(copying fault: Fault, times: Int?) {
        self.token = fault.token
        self.status = fault.status
        self.reason = fault.reason
        self.times = times
        self.rate = fault.rate
        self.delayMilliseconds = fault.delayMilliseconds
        self.connection = fault.connection
    }

    /// The APNs reason usually sent with `status`.
    static func defaultReason(status: Int) -> String {
        switch status {
        case 400: "BadDeviceToken"
        case 403: "InvalidProviderToken"
        case 404: "BadPath"
        case 405: "MethodNotAllowed"
        case 410: "Unregistered"
        case 413: "PayloadTooLarge"
        case 429: "TooManyRequests"
        case 503: "ServiceUnavailable"
        case 500...599: "InternalServerError"
        default: "BadRequest"
        }
    }
}

extension Fault: Encodable {
    private enum CodingKeys: String, CodingKey {
        case token, status, reason, times, rate
        case delayMilliseconds = "delay_ms"
        case connection
    }

    /// The fault as listed by `GET /faults`: every member present, `null` when unset; `times` is the count
    /// still to fire.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(self.token, forKey: .token)
        try container.encode(self.status, forKey: .status)
        try container.encode(self.reason, forKey: .reason)
        try container.encode(self.times, forKey: .times)
        try container.encode(self.rate, forKey: .rate)
        try container.encode(self.delayMilliseconds, forKey: .delayMilliseconds)
        try container.encode(self.connection?.rawValue, forKey: .connection)
    }
}

extension Fault {
    /// Parses and validates a `POST /faults` body:
    /// `{"token"?: T, "status"?: 410, "reason"?: "Unregistered", "times"?: N, "rate"?: 0.0–1.0, "delay_ms"?: MS,
    /// "connection"?: "close" | "goaway"}` with at least one of `status`, `delay_ms` and `connection`.
    /// A member that is `null` counts as absent; members the contract does not name are ignored.
    /// - Throws: ``SinkError`` with code `invalid_fault` for a body that is not such an object.
    public init<Bytes: Collection<UInt8>>(json: Bytes) throws(SinkError) {
        guard let body = try? JSONValue.parse(Array(json)), body.objectMembers != nil else {
            throw .invalidFault("the body must be a JSON object like {\"status\": 410, \"reason\": \"Unregistered\"}")
        }
        let token = try Self.member(body, "token", "a string") { $0.stringValue }
        let status = try Self.member(body, "status", "an integer") { $0.int64Value.flatMap { Int(exactly: $0) } }
        let reason = try Self.member(body, "reason", "a string") { $0.stringValue }
        let times = try Self.member(body, "times", "an integer") { $0.int64Value.flatMap { Int(exactly: $0) } }
        let rate = try Self.member(body, "rate", "a number") { $0.doubleValue }
        let delay = try Self.member(body, "delay_ms", "an integer") { $0.int64Value.flatMap { Int(exactly: $0) } }
        let connection = try Self.member(body, "connection", "\"close\" or \"goaway\"") {
            $0.stringValue.flatMap(Connection.init(rawValue:))
        }
        try self.init(
            token: token, status: status, reason: reason, times: times, rate: rate, delayMilliseconds: delay,
            connection: connection)
    }

    /// The member `key` of `body` read by `read`; nil when absent or `null`.
    /// - Throws: `invalid_fault` naming the member and the `expected` kind when `read` cannot read it.
    private static func member<Value>(
        _ body: JSONValue,
        _ key: String,
        _ expected: String,
        _ read: (JSONValue) -> Value?
    ) throws(SinkError) -> Value? {
        guard let value = body[key], !value.isNull else { return nil }
        guard let read = read(value) else {
            throw .invalidFault("`\(key)` must be \(expected)")
        }
        return read
    }
}
