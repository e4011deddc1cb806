import BadgeWire
import Hummingbird

/// The query parameters of an inspection request, read and checked: a bad value is a ``SinkError``
/// `invalid_query` (400) naming it.
struct SinkQuery {
    /// The longest `wait`, in seconds.
    static let maximumWaitSeconds = 300.0

    private let parameters: Parameters

    init(_ parameters: Parameters) throws(SinkError) {
        self.parameters = parameters
    }

    /// The non-empty values of `name`, repeated or comma separated; nil when absent.
    func list(_ name: String) throws(SinkError) -> [String]? {
        let values = self.parameters.getAll(name)
        guard !values.isEmpty else { return nil }
        let items = values.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }.map(String.init)
        guard !items.contains(where: \.isEmpty) else {
            throw .invalidQuery("`\(name)` must not be empty")
        }
        return items
    }

    /// `token`: one or more tokens.
    func tokens() throws(SinkError) -> [String]? {
        try self.list("token")
    }

    /// The integer `name` in `range`; nil when absent.
    func integer(_ name: String, range: ClosedRange<Int>) throws(SinkError) -> Int? {
        guard let value = self.parameters.get(name) else { return nil }
        guard let number = Int(value), range.contains(number) else {
            let bound = range.upperBound == Int.max ? "at least \(range.lowerBound)" : "in \(range)"
            throw .invalidQuery("`\(name)` must be an integer \(bound), got \"\(value)\"")
        }
        return number
    }

    /// The one string `name`, not empty; nil when absent.
    func string(_ name: String) throws(SinkError) -> String? {
        guard let value = self.parameters.get(name) else { return nil }
        guard !value.isEmpty else { throw .invalidQuery("`\(name)` must not be empty") }
        return value
    }

    /// `wait=SECONDS` (0 to ``maximumWaitSeconds``, fractions allowed) as a deadline from now, at most `limit`
    /// seconds away; nil when absent.
    func wait(limit: Double = SinkQuery.maximumWaitSeconds) throws(SinkError) -> ContinuousClock.Instant? {
        guard let value = self.parameters.get("wait") else { return nil }
        guard let seconds = Double(value), seconds >= 0, seconds <= Self.maximumWaitSeconds else {
            throw .invalidQuery(
                "`wait` must be a number of seconds from 0 to \(Int(Self.maximumWaitSeconds)), got \"\(value)\"")
        }
        return .now + .milliseconds(Int64(min(seconds, limit) * 1000))
    }

    /// The filters of `GET /deliveries`: `token`, `after`, `limit`, `provider`, `status`, `type`, `kind`, `text`.
    func deliveryFilter() throws(SinkError) -> DeliveryFilter {
        var filter = DeliveryFilter()
        filter.tokens = try self.tokens()
        if let value = self.parameters.get("after") {
            guard let number = Int(value) else {
                throw .invalidQuery("`after` must be an integer seq, got \"\(value)\"")
            }
            filter.after = number
        }
        if let value = self.parameters.get("limit") {
            guard let number = Int(value), number >= 0 else {
                throw .invalidQuery("`limit` must be a non-negative integer, got \"\(value)\"")
            }
            filter.limit = number
        }
        if let value = try self.string("provider") {
            guard let provider = PushProvider(rawValue: value) else {
                throw .invalidQuery("`provider` must be apns or fcm, got \"\(value)\"")
            }
            filter.provider = provider
        }
        if let values = try self.list("status") {
            var statuses: Set<Int> = []
            for value in values {
                guard let status = Int(value), (0...599).contains(status) else {
                    throw .invalidQuery("`status` must be HTTP statuses (0 for a broken connection), got \"\(value)\"")
                }
                statuses.insert(status)
            }
            filter.statuses = statuses
        }
        filter.type = try self.string("type")
        if let value = try self.string("kind") {
            guard let kind = DeliveryFilter.PushKind(rawValue: value) else {
                throw .invalidQuery("`kind` must be alert or badge_only, got \"\(value)\"")
            }
            filter.kind = kind
        }
        filter.text = try self.string("text")
        return filter
    }
}
