/// An error that the sink answers matching pushes with, set up through `POST /faults`.
///
/// A fault matches a push to ``token`` (or every push when ``token`` is nil). It fires ``times`` times and then
/// expires, or for a random fraction ``rate`` of the matching pushes, or both, or on every matching push when
/// neither is given. Status and reason are APNs-style; FCM pushes get them translated (410 → 404
/// `UNREGISTERED`, 400 → `INVALID_ARGUMENT`, 429 → `QUOTA_EXCEEDED`, 5xx → `UNAVAILABLE`).
public struct Fault: Sendable, Equatable {
    /// The device token it applies to; nil for every token.
    public let token: String?
    /// The HTTP status to answer with, 400–599.
    public let status: Int
    /// The APNs reason, such as `Unregistered`.
    public let reason: String
    /// How many more pushes it fires for before it expires; nil for no limit.
    public let times: Int?
    /// The probability, 0–1, that it fires for a matching push; nil for always.
    public let rate: Double?

    /// Creates a fault, validating it.
    /// - Parameters:
    ///   - token: The device token it applies to; nil for every token. Must not be empty.
    ///   - status: The HTTP status to answer with, 400–599.
    ///   - reason: The APNs reason; nil for the usual reason of `status` (410 → `Unregistered`, …).
    ///   - times: How many pushes it fires for, at least 1; nil for no limit.
    ///   - rate: The probability, 0–1, that it fires for each matching push; nil for always.
    /// - Throws: ``SinkError`` with code `invalid_fault` when a value is out of range.
    public init(
        token: String? = nil,
        status: Int,
        reason: String? = nil,
        times: Int? = nil,
        rate: Double? = nil
    ) throws(SinkError) {
        if let token, token.isEmpty {
            throw .invalidFault("`token` must not be empty")
        }
        guard (400...599).contains(status) else {
            throw .invalidFault("`status` must be an integer from 400 to 599, got \(status)")
        }
        if let reason, reason.isEmpty || reason.utf8.count > 256 {
            throw .invalidFault("`reason` must be 1 to 256 bytes long")
        }
        if let times, times < 1 {
            throw .invalidFault("`times` must be at least 1, got \(times)")
        }
        if let rate, !(rate >= 0 && rate <= 1) {
            throw .invalidFault("`rate` must be from 0.0 to 1.0, got \(rate)")
        }
        self.token = token
        self.status = status
        self.reason = reason ?? Self.defaultReason(status: status)
        self.times = times
        self.rate = rate
    }

    /// The fault with `times` replaced by the count still to fire.
    func with(remaining: Int?) -> Fault {
        // Values are already valid; rebuild without re-validating.
        Fault(uncheckedToken: self.token, status: self.status, reason: self.reason, times: remaining, rate: self.rate)
    }

    private init(uncheckedToken token: String?, status: Int, reason: String, times: Int?, rate: Double?) {
        self.token = token
        self.status = status
        self.reason = reason
        self.times = times
        self.rate = rate
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
