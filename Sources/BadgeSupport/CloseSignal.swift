import Synchronization

/// Resolves once, when something closes (a broker connection, a store), with the reason it closed, and wakes
/// everyone waiting for that. Only the first ``resolve(_:)`` counts.
///
/// Two ways to wait: ``wait()`` until it resolves, whatever happens to the waiting task (closing a connection must
/// see the close through), and ``waitUnlessCancelled()``, which also returns when the waiting task is cancelled
/// (a service's `run()` that ends on close or on shutdown).
public final class CloseSignal<Reason: Sendable>: Sendable {
    private struct State {
        var reason: Reason?
        var resolved = false
        var nextWaiter: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Reason?, Never>] = [:]
        /// Waiters whose task was cancelled before they were registered.
        var cancelled: Set<UInt64> = []
    }

    /// What registering a waiter found.
    private enum Registration {
        case resolved(Reason)
        case cancelled
        case later
    }

    private let state = Mutex(State())

    /// An unresolved signal.
    public init() {}

    /// Records why it closed and wakes every waiter. Only the first call counts.
    public func resolve(_ reason: Reason) {
        let waiters = state.withLock { state -> [CheckedContinuation<Reason?, Never>] in
            guard !state.resolved else { return [] }
            state.resolved = true
            state.reason = reason
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume(returning: reason) }
    }

    /// True once resolved.
    public var isResolved: Bool { state.withLock { $0.resolved } }

    /// Waits until resolved and returns the reason. Cancelling the waiting task does not end the wait.
    public func wait() async -> Reason {
        let id = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        guard let reason = await suspend(id) else {
            // Only a cancellable wait is resumed with nil, and this one registered no cancellation handler.
            preconditionFailure("CloseSignal: an uncancellable wait ended without a reason")
        }
        return reason
    }

    /// Waits until resolved or until the waiting task is cancelled; nil when cancelled first.
    public func waitUnlessCancelled() async -> Reason? {
        let id = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        return await withTaskCancellationHandler {
            await suspend(id)
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Reason?, Never>? in
                guard !state.resolved else { return nil }
                guard let waiter = state.waiters.removeValue(forKey: id) else {
                    state.cancelled.insert(id)
                    return nil
                }
                return waiter
            }
            waiter?.resume(returning: nil)
        }
    }

    /// Suspends as waiter `id` until resolved (its reason, wrapped) or cancelled (nil).
    private func suspend(_ id: UInt64) async -> Reason? {
        await withCheckedContinuation { (continuation: CheckedContinuation<Reason?, Never>) in
            let now = state.withLock { state -> Registration in
                let cancelled = state.cancelled.remove(id) != nil
                if state.resolved, let reason = state.reason { return .resolved(reason) }
                if cancelled { return .cancelled }
                state.waiters[id] = continuation
                return .later
            }
            switch now {
            case .resolved(let reason): continuation.resume(returning: reason)
            case .cancelled: continuation.resume(returning: nil)
            case .later: break
            }
        }
    }
}

extension CloseSignal where Reason == Void {
    /// Resolves a signal that carries no reason.
    public func resolve() { resolve(()) }
}
