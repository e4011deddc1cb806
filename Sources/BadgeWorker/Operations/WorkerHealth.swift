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
    func databaseAnswered() { state.withLock { if $0.databaseError != nil { $0.databaseError = nil } } }
    func databaseFailed(_ error: String) { state.withLock { $0.databaseError = error } }
}
