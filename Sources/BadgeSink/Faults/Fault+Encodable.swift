extension Fault: Encodable {
    private enum CodingKeys: String, CodingKey {
        case token, status, reason, times, rate
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
    }
}
