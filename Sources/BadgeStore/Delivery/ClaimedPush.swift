import BadgeCore

/// A push claimed for sending: its outbox row as stored when claimed, and what to send (the row's push, or the
/// push rebuilt at a fresh `badge_version` when a newer one had already reached the device).
public struct ClaimedPush: Sendable, Equatable {
    /// The outbox row.
    public var outbox: OutboxPush
    /// What to send.
    public var push: PlannedPush

    /// Creates a claimed push.
    public init(outbox: OutboxPush, push: PlannedPush) {
        self.outbox = outbox
        self.push = push
    }

    /// The outbox id.
    public var id: Int64 { outbox.id }
}
