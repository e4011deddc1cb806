/// What one delivery claim took: the pushes to send, in outbox order, whether the claim reached its limit, and the
/// rows it refused.
public struct ClaimedPushes: Sendable, Equatable {
    /// The pushes to send, in outbox order.
    public var pushes: [ClaimedPush]
    /// The claim found as many due rows as it was allowed to take (some of them may have been dropped by the push
    /// guard, or refused, rather than claimed): more may be due right now. When false, everything due at the
    /// claim's `now` was taken, and only rows committed or made due after it can be due.
    public var reachedLimit: Bool
    /// Due rows the claim could not read: moved into `refused_pushes` and out of the outbox in the claim's
    /// transaction (see ``RefusedPush``). The caller counts and logs them; nothing else is to be done with them.
    public var refused: [RefusedPush]

    /// Creates a claim's result.
    public init(pushes: [ClaimedPush], reachedLimit: Bool, refused: [RefusedPush] = []) {
        self.pushes = pushes
        self.reachedLimit = reachedLimit
        self.refused = refused
    }

    /// Nothing claimed, nothing more due.
    public static let none = ClaimedPushes(pushes: [], reachedLimit: false)
}
