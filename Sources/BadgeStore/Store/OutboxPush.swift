import BadgeCore

/// One row of the outbox: a planned push and its outbox id (increasing in planning order).
public struct OutboxPush: Sendable, Equatable {
    /// The outbox id.
    public var id: Int64
    /// The push.
    public var push: PlannedPush
    /// In a fleet, the lease epoch under which a worker last claimed the push for sending (it may have sent it
    /// and not recorded it yet); nil while nobody claimed it.
    public var claimedEpoch: Int64?
    /// Attempts that ended in a provider answer to try again later (throttling, server errors, timeouts).
    public var attempts: Int
    /// When the push was planned, in microseconds since the epoch by the database's clock (0 for rows planned
    /// before this was recorded).
    public var createdAt: Int64
    /// The earliest time of the next attempt, in microseconds since the epoch by the database's clock (0: at once).
    public var nextAttemptAt: Int64
    /// How old the push was when the store read it, by the database's clock (its now less ``createdAt``): what
    /// a worker counts its age from (the maximum age of a failing push, the push latency), adding the time since on
    /// its own monotonic clock, never reading its wall clock. Claims return it; nil when not read: a listing, a
    /// push its own batch's transaction returns (planned that moment: a worker counts it from when it has it), a
    /// row planned before ``createdAt`` was recorded.
    public var age: Duration?

    /// Creates an outbox push.
    public init(
        id: Int64, push: PlannedPush, claimedEpoch: Int64? = nil, attempts: Int = 0, createdAt: Int64 = 0,
        nextAttemptAt: Int64 = 0, age: Duration? = nil
    ) {
        self.id = id
        self.push = push
        self.claimedEpoch = claimedEpoch
        self.attempts = attempts
        self.createdAt = createdAt
        self.nextAttemptAt = nextAttemptAt
        self.age = age
    }
}
