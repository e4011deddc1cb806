/// The requests parked until a push is recorded (`?wait=` on `/deliveries` and `/devices/{token}`): each is a
/// continuation woken by the next push to one of its tokens (or to any token), by its deadline, or by its
/// cancellation, whichever comes first. Not synchronized; ``SinkState`` guards it.
///
/// A waiter goes through `reserved` (it has an id) → `waiting` (its continuation is parked) → gone (woken, or
/// expired and resumed). An expiry that comes before the continuation is parked leaves `expired`, so that
/// parking it resumes it at once; ``finish(_:)`` forgets the id whatever its state.
struct PushWaiters {
    private enum Entry {
        case reserved
        case waiting(CheckedContinuation<Bool, Never>, tokens: Set<String>?)
        case expired
    }

    /// Who waits: a request's `?wait=`, or a `GET /events` stream between two pushes. Each has a bound of its own,
    /// so that open web views never take the requests' room (nor requests the streams').
    enum Pool: Sendable {
        case requests
        case streams
    }

    private var entries: [UInt64: Entry] = [:]
    /// The pool of each waiter that uses the streams' bound (the others are requests).
    private var streamWaiters: Set<UInt64> = []
    private var nextID: UInt64 = 0
    /// How many requests are parked or about to be; compared with the limit by ``reserve(limit:pool:)``.
    private(set) var active = 0
    /// How many streams are parked or about to be.
    private(set) var activeStreams = 0

    /// Whether no continuation is parked (the check a push makes before looking further).
    var isEmpty: Bool { self.entries.isEmpty }

    /// A new waiter's id; nil when `limit` waiters of its pool are active already.
    mutating func reserve(limit: Int, pool: Pool = .requests) -> UInt64? {
        switch pool {
        case .requests:
            guard self.active < limit else { return nil }
            self.active += 1
        case .streams:
            guard self.activeStreams < limit else { return nil }
            self.activeStreams += 1
        }
        self.nextID += 1
        self.entries[self.nextID] = .reserved
        if pool == .streams { self.streamWaiters.insert(self.nextID) }
        return self.nextID
    }

    /// Parks `continuation` for waiter `id`.
    /// - Returns: false when the waiter expired already (the caller resumes it).
    mutating func park(_ id: UInt64, tokens: Set<String>?, _ continuation: CheckedContinuation<Bool, Never>) -> Bool {
        guard case .reserved = self.entries[id] else { return false }
        self.entries[id] = .waiting(continuation, tokens: tokens)
        return true
    }

    /// Expires waiter `id`: its continuation if parked (the caller resumes it with `false`).
    mutating func expire(_ id: UInt64) -> CheckedContinuation<Bool, Never>? {
        switch self.entries[id] {
        case .waiting(let continuation, _):
            self.entries[id] = nil
            return continuation
        case .reserved:
            self.entries[id] = .expired
            return nil
        case .expired, nil:
            return nil
        }
    }

    /// Takes the continuations of the waiters for `token` or for any token (the caller resumes them with `true`).
    mutating func wake(token: String) -> [CheckedContinuation<Bool, Never>] {
        var woken: [CheckedContinuation<Bool, Never>] = []
        for (id, entry) in self.entries {
            guard case .waiting(let continuation, let tokens) = entry else { continue }
            if let tokens, !tokens.contains(token) {
                continue
            }
            self.entries[id] = nil
            woken.append(continuation)
        }
        return woken
    }

    /// Forgets waiter `id` once its wait is over.
    mutating func finish(_ id: UInt64) {
        self.entries[id] = nil
        if self.streamWaiters.remove(id) != nil {
            self.activeStreams -= 1
        } else {
            self.active -= 1
        }
    }
}
