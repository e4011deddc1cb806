import BadgeDelivery
import Synchronization

/// What `/healthz` and `/readyz` report for a worker, kept up to date by its loops.
///
/// - Live (`/healthz`): no watched operation (a batch, a lease round) has run for longer than the watchdog allows.
///   The watchdog ends the process a little later anyway; a supervisor may restart it sooner.
/// - Ready (`/readyz`): connected to the broker with its partitions consumed (single node) or leased, or waiting
///   for a lease round to hand it some (fleet); the database answered its last call; no provider refuses its
///   configuration.
public final class WorkerHealth: Sendable {
    struct State {
        var connected = false
        var started = false
        var databaseError: String?
        /// Whether the database can write, and the work waiting for it.
        var outage = DatabaseOutage()
        var partitionsHeld: Set<Int> = []
    }

    private let state = Mutex(State())
    let providers: ProviderHealth
    private let watchdog: Mutex<Watchdog?> = Mutex(nil)

    /// A report for the worker whose sender reports provider problems to `providers`.
    public init(providers: ProviderHealth = ProviderHealth()) {
        self.providers = providers
    }

    /// Liveness, with what is stuck when it is not.
    public var liveness: (live: Bool, detail: String) {
        guard let stuck = watchdog.withLock({ $0 })?.longestBusy(), stuck.for > stuck.limit / 2 else {
            return (true, "loops progressing")
        }
        return (false, "\(stuck.name) has run for \(stuck.for) (the watchdog ends the worker after \(stuck.limit))")
    }

    /// Readiness, with the reasons it is not ready.
    public var readiness: (ready: Bool, reasons: [String]) {
        var reasons: [String] = []
        state.withLock { state in
            if !state.connected { reasons.append("not connected to the broker") }
            if state.connected, !state.started { reasons.append("starting: declaring the topology, leasing") }
            if let error = state.databaseError { reasons.append("the database: \(error)") }
        }
        for problem in providers.current {
            reasons.append("\(problem.provider.rawValue) refuses our credentials or configuration: \(problem.reason)")
        }
        return (reasons.isEmpty, reasons)
    }

    /// Partitions this worker consumes now.
    public var partitionsHeld: Set<Int> { state.withLock { $0.partitionsHeld } }

    func watch(_ watchdog: Watchdog?) { self.watchdog.withLock { $0 = watchdog } }
    func connected(_ connected: Bool) {
        state.withLock { state in
            state.connected = connected
            if !connected { state.started = false }
        }
    }
    func started() { state.withLock { $0.started = true } }
    func held(_ partitions: Set<Int>) {
        let changed = state.withLock { state in
            defer { state.partitionsHeld = partitions }
            return state.partitionsHeld != partitions
        }
        if changed { WorkerMetrics.partitionsHeld.record(partitions.count) }
    }
    /// A call to the database succeeded: a failure it reported is over. Returns how long the database could not
    /// write, and how often work waited again meanwhile, when this ends such an outage (see ``DatabaseOutage``; the
    /// caller logs it, once for the worker).
    @discardableResult
    func databaseAnswered() -> (lasted: Duration, relapses: Int)? {
        let action = state.withLock { state in
            if state.databaseError != nil, state.outage.waiting == 0 { state.databaseError = nil }
            return state.outage.succeeded(now: .now)
        }
        guard case .ended(let lasted, let relapses) = action else { return nil }
        return (lasted, relapses)
    }

    func databaseFailed(_ error: String) { state.withLock { $0.databaseError = error } }

    /// A piece of work met the database unable to write (``DatabaseFailure/unavailable``) for the first time: it
    /// waits until ``databaseWaitDone()``. Meanwhile the worker is unready and its watchdog excuses the waits.
    /// Returns whether this began an outage (the caller logs it, once for the worker).
    func databaseWaits(_ error: String) -> Bool {
        let action = state.withLock { state in
            state.databaseError = "cannot write now: \(error)"
            return state.outage.workWaits(now: .now)
        }
        switch action {
        case .began, .waitsAgain:
            watchdog.withLock { $0 }?.pause()
            WorkerMetrics.databaseUnavailable.record(1)
        default: break
        }
        return action == .began
    }

    /// Waiting work met the database unable to write again.
    func databaseStillUnavailable(_ error: String) {
        state.withLock { state in
            state.databaseError = "cannot write now: \(error)"
            state.outage.stillFailing(now: .now)
        }
    }

    /// Work that waited for the database is done (it succeeded, or was given up).
    func databaseWaitDone() {
        let action = state.withLock { state in
            let action = state.outage.workDone(now: .now)
            if action == .nothingWaits { state.databaseError = nil }
            return action
        }
        if action == .nothingWaits {
            watchdog.withLock { $0 }?.resume()
            WorkerMetrics.databaseUnavailable.record(0)
        }
    }
}
