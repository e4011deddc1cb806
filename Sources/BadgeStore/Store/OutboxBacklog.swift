/// What waits in one partition's outbox.
public struct OutboxBacklog: Sendable, Equatable {
    /// The partition.
    public var partition: Int
    /// Rows in its outbox.
    public var depth: Int
    /// When its oldest row was planned, in microseconds since the epoch; nil when it is empty.
    public var oldestCreatedAt: Int64?

    /// Creates a backlog figure.
    public init(partition: Int, depth: Int, oldestCreatedAt: Int64?) {
        self.partition = partition
        self.depth = depth
        self.oldestCreatedAt = oldestCreatedAt
    }
}
