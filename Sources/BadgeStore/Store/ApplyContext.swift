/// Where a batch came from: its partition (recorded on its outbox rows) and, in a fleet, the lease it was consumed
/// under (checked in the batch's transaction).
public struct ApplyContext: Sendable, Equatable {
    public var partition: Int?
    public var lease: PartitionLease?
    /// The most active devices a user keeps: a registration beyond it deactivates the user's device registered
    /// longest ago (by its registration's `occurred_at`; ties: the smallest token), one per registration.
    public var maxDevicesPerUser: Int
    /// Whether the batch's transaction also claims the pushes it plans where it safely can, so that the caller sends
    /// them without a claim of its own (PostgreSQL, under a lease; elsewhere it has no effect). A push is claimed
    /// with its device's other pushes of the batch when nothing else of that device waits in the outbox; such
    /// pushes come back with the lease's epoch in ``OutboxPush/claimedEpoch`` and are held (their
    /// `next_attempt_at` is ``ApplyContext/claimHold`` ahead) until the caller records them. Only the lease's
    /// holder may ask for it, and it must then send those pushes itself (see ``BadgeStore/apply(_:policy:)``).
    public var claimsPushes: Bool

    /// How long pushes claimed by their own batch's transaction (``claimsPushes``) are held for their claimer: no
    /// claim under the same epoch takes them before (a claim under a newer one does at once). The claimer has them
    /// in hand a moment after its commit, and from then on takes care of them itself (it never claims them again
    /// while it has them); the hold only has to cover that moment. It ends on its own for a commit whose answer
    /// was lost (the connection broke as it committed): its claimed pushes then go out with a claim of their
    /// partition's delivery stage, this long after.
    public static let claimHold = Duration.seconds(5)

    /// The most rows one read-state event (`notifications_read_all`, `notifications_opened`, `conversation_read`)
    /// changes in one transaction; nil: no bound. A batch with an event that would change more fails with
    /// `read_state_too_large` naming it, before it writes anything; the caller then applies the events before it,
    /// the event alone in chunks (``chunked``), and the events after it. Whatever one user holds, a transaction
    /// then reads and writes at most this many of the user's rows per such event.
    public var readStateChunk: Int?
    /// The batch is one read-state event applied chunk by chunk: each transaction changes at most
    /// ``readStateChunk`` rows, oldest first, leaving the counts right for the rows it changed; until the last
    /// chunk, the event is not recorded as processed, plans no push, and comes back ``AppliedEvent/unfinished``.
    /// The last chunk records it and plans its badge-only pushes with the final counts.
    public var chunked: Bool
    /// In a chunked batch, where the previous chunk stopped (``AppliedEvent/resumeAfter``): the next reads only
    /// rows after it, so that a million rows cost a million, not a chunk's worth of index entries for every row
    /// already changed. Nil starts from the oldest (after a restart, say: correct, only slower).
    public var resumeAfter: ReadStateCursor?
    /// The default cap on devices per user.
    public static let defaultMaxDevicesPerUser = 100

    public init(
        partition: Int? = nil, lease: PartitionLease? = nil, maxDevicesPerUser: Int = defaultMaxDevicesPerUser,
        claimsPushes: Bool = false, readStateChunk: Int? = nil, chunked: Bool = false,
        resumeAfter: ReadStateCursor? = nil
    ) {
        self.resumeAfter = resumeAfter
        self.readStateChunk = readStateChunk
        self.chunked = chunked
        self.partition = partition
        self.lease = lease
        self.maxDevicesPerUser = maxDevicesPerUser
        self.claimsPushes = claimsPushes
    }

    /// No partition, no lease: a single node.
    public static let none = ApplyContext()
}

/// Where a chunk of a read-state event stopped: the last row it changed, in the order chunks take rows
/// (`occurred_at`, then id).
public struct ReadStateCursor: Sendable, Hashable {
    public var occurredAt: Int64
    public var id: String

    public init(occurredAt: Int64, id: String) {
        self.occurredAt = occurredAt
        self.id = id
    }

    /// Before every row.
    static let start = ReadStateCursor(occurredAt: .min, id: "")
}
