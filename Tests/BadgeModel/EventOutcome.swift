import BadgeCore

/// What applying one event to an ``InboxModel`` did.
public struct EventOutcome: Sendable, Equatable {
    /// The pushes the event causes, in device-token order.
    public var pushes: [PlannedPush]
    /// Whether any state changed (beyond remembering the event id).
    public var changed: Bool
    /// Whether the event id had been applied before (then nothing happens).
    public var isDuplicate: Bool

    /// Creates an outcome.
    public init(pushes: [PlannedPush] = [], changed: Bool = false, isDuplicate: Bool = false) {
        self.pushes = pushes
        self.changed = changed
        self.isDuplicate = isDuplicate
    }
}
