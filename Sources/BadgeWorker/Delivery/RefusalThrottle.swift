import Synchronization

/// When to log a kind of refusal that repeats with every push (a push to a provider the deployment does not
/// deliver to): the first of each key at once, then at most one line per key every ``interval``, which counts the
/// refusals not logged since. A value-type state machine: `note` takes a refusal and the monotonic time, and
/// answers whether to log and how many the line stands for.
struct RefusalThrottle {
    /// The least time between two lines of one key.
    static let defaultInterval = Duration.seconds(600)
    /// The most keys told apart: keys come from the data (a device's provider, later its app), so past this many
    /// the others share the key ``otherKey``.
    static let maxKeys = 64
    /// The key of refusals beyond ``maxKeys`` distinct keys.
    static let otherKey = "other"

    private struct Entry {
        var lastLogged: ContinuousClock.Instant
        var unlogged: Int
    }

    let interval: Duration
    private var entries: [String: Entry] = [:]

    init(interval: Duration = RefusalThrottle.defaultInterval) {
        self.interval = interval
    }

    /// Notes one refusal of `key` at `now`; returns the key to log it under and how many refusals the line stands
    /// for (this one and those not logged since the key's last line), or nil when no line is due.
    mutating func note(_ key: String, now: ContinuousClock.Instant) -> (key: String, count: Int)? {
        let key = entries[key] != nil || entries.count < Self.maxKeys ? key : Self.otherKey
        guard var entry = entries[key] else {
            entries[key] = Entry(lastLogged: now, unlogged: 0)
            return (key, 1)
        }
        entry.unlogged += 1
        if now - entry.lastLogged >= interval {
            let count = entry.unlogged
            entries[key] = Entry(lastLogged: now, unlogged: 0)
            return (key, count)
        }
        entries[key] = entry
        return nil
    }
}

/// A ``RefusalThrottle`` shared by the worker's partitions.
final class SharedRefusalThrottle: Sendable {
    private let throttle: Mutex<RefusalThrottle>

    init(interval: Duration = RefusalThrottle.defaultInterval) {
        throttle = Mutex(RefusalThrottle(interval: interval))
    }

    /// See ``RefusalThrottle/note(_:now:)``.
    func note(_ key: String, now: ContinuousClock.Instant = .now) -> (key: String, count: Int)? {
        throttle.withLock { $0.note(key, now: now) }
    }
}
