import BadgeWire

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
