/// What one delivery claim took: the pushes to send, in outbox order, whether the claim reached its limit, and the
/// rows it refused.
public struct ClaimedPushes: Sendable, Equatable {
    /// The pushes to send, in outbox order.
    public var pushes: [ClaimedPush]
    /// The claim found as many due rows as it was allowed to take, in all or of some device (``perDeviceLimit``;
    /// some of them may have been dropped by the push guard, or refused, rather than claimed): more may be due
    /// right now. When false, everything due at the claim's `now` was taken, and only rows committed or made due
    /// after it can be due.
    public var reachedLimit: Bool
    /// Due rows the claim could not read: moved into `refused_pushes` and out of the outbox right after the claim
    /// (see ``RefusedPush``). The caller counts and logs them; nothing else is to be done with them.
    public var refused: [RefusedPush]
    /// Claimed rows the push guard dropped (superseded, or to a token that moved to another user): the caller
    /// removes them with the round's record (``DeliveryRecord/dropped``).
    public var dropped: [Int64]
    /// What the partition's outbox holds beyond this claim, read by the claim's own statement (its ``OutboxAhead/heldBy``
    /// left empty): the earliest retry of a row it did not take, and whether a row never attempted is left. Nil for
    /// a claim of every partition.
    public var ahead: OutboxAhead?

    /// Creates a claim's result.
    public init(
        pushes: [ClaimedPush], reachedLimit: Bool, refused: [RefusedPush] = [], dropped: [Int64] = [],
        ahead: OutboxAhead? = nil
    ) {
        self.pushes = pushes
        self.reachedLimit = reachedLimit
        self.refused = refused
        self.dropped = dropped
        self.ahead = ahead
    }

    /// Most rows of one device (token) a claim takes: its oldest due ones. A device with a long backlog gets this
    /// many pushes in each round and the rest in the rounds after, still in order, while every other device of the
    /// partition with something due goes in the same round (up to the round's size): one device's backlog delays
    /// the others by one round at most. A round sends one device's pushes one after another, so this also bounds
    /// how long a round lasts.
    public static let perDeviceLimit = 16

    /// Nothing claimed, nothing more due.
    public static let none = ClaimedPushes(pushes: [], reachedLimit: false)
}
