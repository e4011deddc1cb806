import BadgeCore
import BadgeStore
import Logging
import Synchronization

/// One worker's ingestion transactions: the batches its partitions' ingestion stages commit at the same time share
/// one transaction (``CommitGroup``), so the worker pays one transaction's fixed cost (its round trips, its
/// commit, its lease check) for all of them instead of one per partition.
///
/// A batch's result is exactly what its own transaction would have given. A shared transaction that fails is not
/// anyone's answer: every batch of it is applied again on its own (``apply(_:context:)`` returns nil), so a lost
/// lease, or data the database refuses, fails only the batch it belongs to, and poison isolation sees one
/// partition's batch.
final class IngestionGroup: Sendable {
    /// How a waiting batch's ingestion goes on.
    private enum Verdict: Sendable {
        /// Lead the next round.
        case lead
        /// Applied in the round.
        case applied([AppliedEvent])
        /// The shared round failed: apply the batch on its own.
        case alone
    }

    private struct Submission: Sendable {
        let batch: ApplyBatch
        let continuation: CheckedContinuation<Verdict, Never>
    }

    private let group: Mutex<CommitGroup<Submission>>
    private let store: any BadgeStore
    private let policy: BadgePolicy
    private let health: WorkerHealth?
    private let logger: Logger

    init(store: any BadgeStore, policy: BadgePolicy, maxWeight: Int, health: WorkerHealth?, logger: Logger) {
        self.group = Mutex(CommitGroup(maxWeight: maxWeight))
        self.store = store
        self.policy = policy
        self.health = health
        self.logger = logger
    }

    /// Applies `events` under `context` in the worker's next ingestion transaction, with the batches of its other
    /// partitions that arrive meanwhile; transient failures are retried in place. Returns nil when that shared
    /// transaction failed: the caller applies the batch on its own (``applyAlone(_:context:)``).
    func apply(_ events: [Event], context: ApplyContext) async throws -> [AppliedEvent]? {
        let weight = events.reduce(0) { $0 + PartitionProcessor.weight(of: $1) }
        let batch = ApplyBatch(events: events, context: context)
        let verdict = await withCheckedContinuation { continuation in
            let arrival = group.withLock {
                $0.arrived(Submission(batch: batch, continuation: continuation), weight: weight)
            }
            if arrival == .lead { continuation.resume(returning: .lead) }
        }
        switch verdict {
        case .applied(let applied): return applied
        case .alone: return nil
        case .lead: return try await lead()
        }
    }

    /// Applies `events` in a transaction of their own, retrying transient failures in place.
    func applyAlone(_ events: [Event], context: ApplyContext) async throws -> [AppliedEvent] {
        try await Retry.transient("apply", health: health, logger: logger) { [store, policy] in
            try await store.apply(events, policy: policy, context: context)
        }
    }

    /// Runs one round, whose first batch is the caller's (its continuation already resumed), answers the others
    /// and hands the lead on.
    private func lead() async throws -> [AppliedEvent]? {
        let round = group.withLock { $0.takeRound() }
        let outcome: Result<[[AppliedEvent]], any Error>
        if round.count == 1 {
            outcome = await Result {
                [try await applyAlone(round[0].batch.events, context: round[0].batch.context)]
            }
        } else {
            let batches = round.map(\.batch)
            outcome = await Result { [store, policy] in
                try await Retry.transient("apply", health: health, logger: logger) {
                    try await store.apply(batches, policy: policy)
                }
            }
            if case .failure(let error) = outcome {
                logger.info(
                    "a shared ingestion transaction failed; applying its partitions' batches one by one",
                    metadata: ["worker.batches": "\(round.count)", "worker.error": "\(error)"])
            }
        }
        for (index, submission) in round.enumerated().dropFirst() {
            switch outcome {
            case .success(let applied): submission.continuation.resume(returning: .applied(applied[index]))
            case .failure: submission.continuation.resume(returning: .alone)
            }
        }
        if case .lead(let next) = group.withLock({ $0.roundEnded() }) {
            next.continuation.resume(returning: .lead)
        }
        switch outcome {
        case .success(let applied): return applied[0]
        case .failure(let error):
            if round.count > 1 { return nil }
            throw error
        }
    }
}

extension Result where Failure == any Error {
    /// The result of `body`.
    fileprivate init(_ body: () async throws -> Success) async {
        do {
            self = .success(try await body())
        } catch {
            self = .failure(error)
        }
    }
}
