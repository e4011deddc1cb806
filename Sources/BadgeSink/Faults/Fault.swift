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
