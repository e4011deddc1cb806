import Hummingbird

/// Counters of the pushes recorded since the sink started or since the last `DELETE /deliveries`.
public struct SinkStats: Sendable, Equatable {
    /// How many pushes were recorded.
    public let received: Int
    /// How many pushes were answered with each HTTP status (0: a connection fault answered none).
    public let byStatus: [Int: Int]
    /// How many of the oldest deliveries were dropped to stay within `--max-deliveries` and
    /// `--max-delivery-bytes`.
    public let dropped: Int
    /// The bytes the kept deliveries take: headers and bodies as stored plus a fixed-size record each.
    public let keptBytes: Int
    /// The bytes of the deliveries dropped.
    public let droppedBytes: Int

    /// Creates counters.
    public init(received: Int, byStatus: [Int: Int], dropped: Int = 0, keptBytes: Int = 0, droppedBytes: Int = 0) {
        self.received = received
        self.byStatus = byStatus
        self.dropped = dropped
        self.keptBytes = keptBytes
        self.droppedBytes = droppedBytes
    }
}

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
