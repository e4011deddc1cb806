import BadgeCore

/// What ``PipelineStore/apply(_:policy:)`` did with one event of a batch.
public struct AppliedEvent: Sendable, Equatable {
    /// The event.
    public var event: Event
    /// Whether the event id had been applied before (then it had no effect).
    public var duplicate: Bool
    /// The pushes the event caused, as written to the outbox, in planning order.
    public var pushes: [OutboxPush]
    /// A chunk of a read-state event applied in chunks (``ApplyContext/chunked``) that was not its last: apply it
    /// again for the next.
    public var unfinished: Bool
    /// For an ``unfinished`` chunk: where the next chunk goes on (``ApplyContext/resumeAfter``).
    public var resumeAfter: ReadStateCursor?

    /// Creates a result.
    public init(
        event: Event, duplicate: Bool, pushes: [OutboxPush], unfinished: Bool = false,
        resumeAfter: ReadStateCursor? = nil
    ) {
        self.resumeAfter = resumeAfter
        self.event = event
        self.duplicate = duplicate
        self.pushes = pushes
        self.unfinished = unfinished
    }
}
