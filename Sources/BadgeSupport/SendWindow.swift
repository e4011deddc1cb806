import Synchronization

/// Until when something may still go out: read at the last moment by whoever writes it, moved on by whoever holds
/// the right to send. A fleet worker's term on a partition's lease keeps one (`LeaseTerm`), and the push sender
/// writes a request's body only while it is open. Only the monotonic clock is read.
///
/// Reading it is the whole of what the sender knows of leases: no call goes from the sender back to the store.
public final class SendWindow: Sendable {
    private let end: Mutex<ContinuousClock.Instant>

    /// A window open until `end`.
    public init(until end: ContinuousClock.Instant) {
        self.end = Mutex(end)
    }

    /// Moves the window's end to `end` when that is later: it never closes earlier than it was.
    public func extend(to end: ContinuousClock.Instant) {
        self.end.withLock { $0 = max($0, end) }
    }

    /// Whether the window is open now.
    public var isOpen: Bool {
        let now = ContinuousClock.now
        return end.withLock { now < $0 }
    }
}
