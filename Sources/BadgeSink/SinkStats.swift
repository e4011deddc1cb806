/// Counters of the pushes recorded since the sink started or since the last `DELETE /deliveries`.
public struct SinkStats: Sendable, Equatable {
    /// How many pushes were recorded.
    public let received: Int
    /// How many pushes were answered with each HTTP status.
    public let byStatus: [Int: Int]
    /// How many of the oldest deliveries were dropped to stay within `--max-deliveries`.
    public let dropped: Int

    /// Creates counters.
    public init(received: Int, byStatus: [Int: Int], dropped: Int = 0) {
        self.received = received
        self.byStatus = byStatus
        self.dropped = dropped
    }

    /// `{"received": N, "by_status": {"200": N, …}, "dropped": N}`, statuses in ascending order.
    public var json: [UInt8] {
        var writer = JSONWriter(capacity: 64)
        writer.raw("{\"received\":")
        writer.int(self.received)
        writer.raw(",\"by_status\":{")
        for (index, status) in self.byStatus.keys.sorted().enumerated() {
            if index > 0 {
                writer.raw(",")
            }
            writer.string(String(status))
            writer.raw(":")
            writer.int(self.byStatus[status] ?? 0)
        }
        writer.raw("},\"dropped\":")
        writer.int(self.dropped)
        writer.raw("}")
        return writer.bytes
    }
}
