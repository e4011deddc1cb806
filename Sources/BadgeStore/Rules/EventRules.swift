import BadgeCore
import BadgeWire

/// The contract's count rules, applied to the database through an ``SQLExecutor``; the tests check them against
/// the reference model (`InboxModel` in `Tests/BadgeModel`).
///
/// Written once for both backends, set-based: a batch costs a constant number of statements whatever its size.
/// 1. **Load** (``load(_:)``): record the batch's event ids, create and lock its users' rows (in user-id order, so
///    concurrent batches wait for each other instead of deadlocking), and read, one part per kind, exactly the
///    rows the batch can change: the notifications and messages its read-state events would turn read or seen,
///    the tombstones, watermarks and devices it touches. All parts are one ``SQLReadBatch``: one statement on
///    PostgreSQL.
/// 2. **Apply** in memory, event by event, in order: the same rules as the model, so each push carries the counts
///    and `badge_version` right after its event.
/// 3. **Write** (``write()``): one statement per table for everything that changed, and the outbox in planning
///    order.
///
/// Every loaded row changes state in the batch (a notification changes state at most twice in its life), so the
/// cost of an event does not grow with the number of stored or unread notifications. The counters live in the
/// `users` row and are maintained, never recounted.
struct EventRules {
    let sql: any SQLExecutor
    let policy: BadgePolicy
    /// The partition queue the batch came from, recorded on its outbox rows.
    let partition: Int?
    /// See ``ApplyContext/maxDevicesPerUser``.
    let maxDevicesPerUser: Int
    /// Runs before each event with its index in the batch (a test hook for injecting failures).
    let beforeEvent: (@Sendable (Int, any SQLExecutor) async throws -> Void)?
    /// On PostgreSQL, the leases the batch is applied under (one per partition it covers): checked by the batch's
    /// first statement (see `lockUsers`) rather than by one of its own. Empty when the caller checked them
    /// (SQLite) or there are none.
    let leases: [PartitionLease]
    /// The partition of each event when the batch covers several (see ``StoreQueries/apply(_:policy:database:beforeEvent:)``);
    /// empty when every event is of ``partition``.
    var eventPartitions: [Int?] = []
    /// The partition of each push in ``planned``, recorded on its outbox row.
    var plannedPartitions: [Int?] = []
    /// See ``ApplyContext/readStateChunk``.
    var readStateChunk: Int?
    /// See ``ApplyContext/chunked``: the batch is one read-state event, applied chunk by chunk.
    var chunked = false
    /// In a chunked batch, whether this chunk is not the event's last (set by ``load(_:)``).
    var unfinishedChunk = false
    /// Rows the read-state parts of ``load(_:)`` returned, per watermark (user, or user and conversation), to
    /// compare with ``readStateChunk``.
    var readStateRows: [ReadStateKey: Int] = [:]
    /// In a chunked batch: where the previous chunk stopped (see ``ApplyContext/resumeAfter``), and the last row
    /// this one read.
    var resumeAfter = ReadStateCursor.start
    var lastRead: ReadStateCursor?

    var users: [String: UserRow] = [:]
    var loadedUsers: [String: UserRow] = [:]
    /// Event ids of the batch that were not processed before; an id leaves the set at its first use.
    var fresh: Set<String> = []
    /// Per user, the notifications loaded or stored by the batch, by id. An id absent here is not stored, or
    /// stored in a state the batch cannot change (see ``load(_:)``).
    var notifications: [String: [String: NotificationRow]] = [:]
    /// Per user, the read tombstones of the batch's notification ids: loaded, or added by the batch.
    var tombstones: [String: Set<String>] = [:]
    var tombstonesAdded: Set<UserItem> = []
    var tombstonesRemoved: Set<UserItem> = []
    var messages: [UserItem: [String: MessageRow]] = [:]
    /// Message ids (per user) already stored before the batch.
    var storedMessages: Set<UserItem> = []
    var watermarks: [UserItem: Int64] = [:]
    var changedWatermarks: Set<UserItem> = []
    var devices: [String: DeviceRow] = [:]
    /// Active tokens per user.
    var tokensByUser: [String: Set<String>] = [:]
    /// The batch's pushes in planning order, written to the outbox at the end of the batch.
    var planned: [PlannedPush] = []
    /// The serialised event of each alert in `planned`, by event id.
    var eventJSON: [String: String] = [:]

    init(
        sql: any SQLExecutor, policy: BadgePolicy, partition: Int? = nil,
        maxDevicesPerUser: Int = ApplyContext.defaultMaxDevicesPerUser,
        beforeEvent: (@Sendable (Int, any SQLExecutor) async throws -> Void)? = nil, leases: [PartitionLease] = []
    ) {
        self.sql = sql
        self.leases = leases
        self.policy = policy
        self.partition = partition
        self.maxDevicesPerUser = maxDevicesPerUser
        self.beforeEvent = beforeEvent
    }

    // MARK: - Batch

    /// Applies `events` in order; the caller owns the transaction.
    mutating func apply(_ events: [Event]) async throws -> [AppliedEvent] {
        try await load(events)
        // Per event: whether it is a duplicate and the range of its pushes in `planned`.
        var outcomes: [(duplicate: Bool, pushes: Range<Int>)] = []
        outcomes.reserveCapacity(events.count)
        for (index, event) in events.enumerated() {
            if let beforeEvent { try await beforeEvent(index, sql) }
            let start = planned.count
            let duplicate = try apply(event)
            let eventPartition = eventPartitions.isEmpty ? partition : eventPartitions[index]
            plannedPartitions.append(contentsOf: repeatElement(eventPartition, count: planned.count - start))
            outcomes.append((duplicate, start..<planned.count))
        }
        let rows = try await write()
        if unfinishedChunk, let event = events.first {
            // Not processed yet: the event's next chunk must find it fresh.
            var binds = SQLBinds()
            let statement = "DELETE FROM processed_events WHERE event_id = \(binds.add(.text(event.id)))"
            try await sql.execute(statement, binds.values)
        }
        return zip(events, outcomes).map { event, outcome in
            AppliedEvent(
                event: event, duplicate: outcome.duplicate,
                pushes: outcome.pushes.map { index in
                    OutboxPush(
                        id: rows[index].id, push: planned[index], createdAt: rows[index].createdAt)
                }, unfinished: unfinishedChunk, resumeAfter: unfinishedChunk ? lastRead : nil)
        }
    }
}
