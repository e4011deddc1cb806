/// Where a batch came from: its partition (recorded on its outbox rows) and, in a fleet, the lease it was consumed
/// under (checked in the batch's transaction).
public struct ApplyContext: Sendable, Equatable {
    public var partition: Int?
    public var lease: PartitionLease?
    /// The most active devices a user keeps: a registration beyond it deactivates the user's device registered
    /// longest ago (by its registration's `occurred_at`; ties: the smallest token), one per registration.
    public var maxDevicesPerUser: Int
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
        readStateChunk: Int? = nil, chunked: Bool = false,
        resumeAfter: ReadStateCursor? = nil
    ) {
        self.resumeAfter = resumeAfter
        self.readStateChunk = readStateChunk
        self.chunked = chunked
        self.partition = partition
        self.lease = lease
        self.maxDevicesPerUser = maxDevicesPerUser
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
