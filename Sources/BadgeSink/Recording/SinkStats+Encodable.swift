import Hummingbird

extension SinkStats: ResponseEncodable {
    private enum CodingKeys: String, CodingKey {
        case received
        case byStatus = "by_status"
        case dropped
    }

    /// `{"received": N, "by_status": {"200": N, …}, "dropped": N}`, the answer of `GET /stats`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(self.received, forKey: .received)
        var byStatus: [String: Int] = [:]
        for (status, count) in self.byStatus {
            byStatus[String(status)] = count
        }
        try container.encode(byStatus, forKey: .byStatus)
        try container.encode(self.dropped, forKey: .dropped)
    }
}
