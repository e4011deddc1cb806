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
