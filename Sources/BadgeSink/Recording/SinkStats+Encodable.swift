import Hummingbird

extension SinkStats: ResponseEncodable {
    private enum CodingKeys: String, CodingKey {
        case received
        case byStatus = "by_status"
        case dropped
        case keptBytes = "kept_bytes"
        case droppedBytes = "dropped_bytes"
    }

    /// `{"received": N, "by_status": {"200": N, …}, "dropped": N, "kept_bytes": N, "dropped_bytes": N}`, the
    /// answer of `GET /stats`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(self.received, forKey: .received)
        var byStatus: [String: Int] = [:]
        for (status, count) in self.byStatus {
            byStatus[String(status)] = count
        }
        try container.encode(byStatus, forKey: .byStatus)
        try container.encode(self.dropped, forKey: .dropped)
        try container.encode(self.keptBytes, forKey: .keptBytes)
        try container.encode(self.droppedBytes, forKey: .droppedBytes)
    }
}
