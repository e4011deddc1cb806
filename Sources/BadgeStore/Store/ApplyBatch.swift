import BadgeCore

/// One partition's events for ``PipelineStore/apply(_:policy:)``, which applies several such batches in one
/// transaction: the events in order, under their partition's context (its partition recorded on their outbox rows,
/// its lease checked).
public struct ApplyBatch: Sendable, Equatable {
    public var events: [Event]
    public var context: ApplyContext

    /// Creates a batch.
    public init(events: [Event], context: ApplyContext) {
        self.events = events
        self.context = context
    }
}
