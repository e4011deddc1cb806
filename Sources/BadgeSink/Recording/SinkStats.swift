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
