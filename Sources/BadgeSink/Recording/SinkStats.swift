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
}
