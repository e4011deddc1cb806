import BadgeDelivery
import BadgeStore
import Logging

/// The send fence of a fleet worker: a push goes out only inside the worker's term on its partition's lease.
///
/// Before each attempt the term is made valid (renewing the lease in the database if the term ran out, failing
/// with `lease_lost` if the lease is gone); when the connection is ready for the body the term is checked again,
/// so a worker frozen anywhere before that point (in the claim, in the connection pool's queue, between retries)
/// does not deliver the push after the partition moved on.
struct LeaseFence: SendFence {
    let term: LeaseTerm
    let store: any PipelineStore
    let health: WorkerHealth?
    let logger: Logger

    func prepare() async throws {
        // The common case, before every push: the term is valid and nothing is to be done. Checked here, outside
        // `Retry.transient`, whose time limit starts a task group of two child tasks, one of them asleep on a 10 s
        // timer, for every call.
        if term.isValid { return }
        try await Retry.transient("renew lease", health: health, logger: logger) { [term, store] in
            try await term.ensureValid { lease in
                try await store.renewLease(lease, ttlMilliseconds: term.ttlMilliseconds)
            }
        }
    }

    func check() throws {
        try term.check()
    }
}
