/// What one delivery claim took: the pushes to send, in outbox order, and whether the claim reached its limit.
public struct ClaimedPushes: Sendable, Equatable {
    /// The pushes to send, in outbox order.
    public var pushes: [ClaimedPush]
    /// The claim found as many due rows as it was allowed to take (some of them may have been dropped by the push
    /// guard rather than claimed): more may be due right now. When false, everything due at the claim's `now` was
    /// taken, and only rows committed or made due after it can be due.
    public var reachedLimit: Bool

    /// Creates a claim's result.
    public init(pushes: [ClaimedPush], reachedLimit: Bool) {
        self.pushes = pushes
        self.reachedLimit = reachedLimit
    }

    /// Nothing claimed, nothing more due.
    public static let none = ClaimedPushes(pushes: [], reachedLimit: false)
}
