/// What waits in one partition's outbox beyond what a claim took: what its delivery loop needs to know to sleep
/// until then, rather than look again on a timer (see ``PipelineStore/outboxAhead(partition:)``).
public struct OutboxAhead: Sendable, Equatable {
    /// How long until the partition's earliest retry is due, by the database's clock (zero when one is due
    /// already); nil when no push of the partition waits for a retry.
    public var retryIn: Duration?
    /// Whether the partition holds a push never attempted: one held back by
    /// an earlier push of its device (in another partition, or waiting for a retry), or committed after the claim
    /// began. Such a push becomes due without anything this loop does or hears of.
    public var heldBack: Bool
    /// The other partitions whose rows hold back some of these pushes (the first push of their device is there),
    /// when ``heldBack``: their loops are woken (on PostgreSQL the look-ahead has notified them, see
    /// ``PipelineStore/listenForOutbox(listening:partition:)``), since nothing else may.
    public var heldBy: [Int]

    /// Creates a look-ahead.
    public init(retryIn: Duration?, heldBack: Bool, heldBy: [Int] = []) {
        self.retryIn = retryIn
        self.heldBack = heldBack
        self.heldBy = heldBy
    }
}
