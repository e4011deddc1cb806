/// What waits in one partition's outbox.
public struct OutboxBacklog: Sendable, Equatable {
    /// The partition.
    public var partition: Int
    /// Rows in its outbox.
    public var depth: Int
    /// When its oldest row was planned, in microseconds since the epoch by the database's clock; nil when it is
    /// empty.
    public var oldestCreatedAt: Int64?
    /// How old its oldest row is, by the database's clock (its now less ``oldestCreatedAt``); nil when it is
    /// empty.
    public var oldestAge: Duration?

    /// Creates a backlog figure.
    public init(partition: Int, depth: Int, oldestCreatedAt: Int64?, oldestAge: Duration? = nil) {
        self.partition = partition
        self.depth = depth
        self.oldestCreatedAt = oldestCreatedAt
        self.oldestAge = oldestAge
    }
}
