import BadgeCore
import BadgeStore
import Logging
import Synchronization

/// Transactions shared by one worker's partitions: requests of the same kind that its partitions' stages make at
/// the same time (their ingestion batches, see ``ingestion(store:policy:maxWeight:interval:health:logger:)``, and
/// their delivery records, see `DeliveryRounds.record(_:)`) run as one transaction (``TransactionGroupStateMachine``), so the worker pays one transaction's fixed cost (its round
/// trips, its commit, its lease check) for all of them instead of one per partition. Partitions take their batches
/// at the group's tick (``awaitTick(urgent:)``), so that rounds start at most once every `interval`.
///
/// Each request's answer is exactly what its own transaction would have given. A shared transaction that fails is
/// nobody's answer: every request of it is run again on its own (``alone(_:)``), so a lost lease, or data the
/// database refuses, fails only the partition it belongs to.
final class TransactionGroup<Request: Sendable, Answer: Sendable>: Sendable {
    /// How a waiting request's stage goes on.
    private enum Verdict: Sendable {
        /// Lead the next round.
        case lead
        /// Answered in the round.
        case answered(Answer)
        /// The shared round failed: run the request on its own.
        case alone
    }

    private struct Submission: Sendable {
        let request: Request
        let continuation: CheckedContinuation<Verdict, Never>
    }

    private let group: Mutex<TransactionGroupStateMachine<Submission, CheckedContinuation<Void, Never>>>
    /// What the requests are, for the log.
    private let what: String
    private let transaction: @Sendable ([Request]) async throws -> [Answer]
    private let logger: Logger
    /// The clock the ticks are read from and timed on (a test's own, or the continuous clock).
    private let now: @Sendable () -> ContinuousClock.Instant
    private let sleep: @Sendable (ContinuousClock.Instant) async throws -> Void

    /// A group of `what` requests: `transaction` runs one or several in one transaction (one answer per request,
    /// in order) and retries transient failures itself; rounds start at most once every `interval`, and a tick
    /// waits `gathering` at least (nil: the default, see ``TransactionGroupStateMachine/gathering``), both timed
    /// on `clock`.
    init<C: Clock>(
        _ what: String, maxWeight: Int, interval: Duration = .zero, gathering: Duration? = nil,
        clock: C = ContinuousClock(), logger: Logger,
        transaction: @escaping @Sendable ([Request]) async throws -> [Answer]
    ) where C.Instant == ContinuousClock.Instant {
        self.group = Mutex(
            TransactionGroupStateMachine(maxWeight: maxWeight, interval: interval, gathering: gathering))
        self.what = what
        self.transaction = transaction
        self.logger = logger
        self.now = { clock.now }
        self.sleep = { try await clock.sleep(until: $0, tolerance: nil) }
    }

    /// Partitions waiting for a tick another partition times (see ``awaitTick(urgent:)``).
    var joinedTick: Int { group.withLock { $0.joinedCount } }

    /// Returns when the calling partition may take its batch: at once when `urgent` (its buffer holds a full batch), at
    /// the next tick otherwise (`interval` after the last round began, and no sooner than the gathering moment from
    /// now, see ``TransactionGroupStateMachine/tickRequested(now:urgent:)``). The partition is then armed: its next
    /// ``run(_:weight:armed:)`` passes `armed: true`, or it calls ``disarm()``, before it waits for anything else.
    func awaitTick(urgent: Bool) async {
        switch group.withLock({ $0.tickRequested(now: now(), urgent: urgent) }) {
        case .go:
            return
        case .time(let until):
            // Cancelled (the partition stops): the tick comes early, which does no harm.
            try? await sleep(until)
            for waiter in group.withLock({ $0.tickElapsed() }) { waiter.resume() }
        case .join:
            await withCheckedContinuation { continuation in
                if !group.withLock({ $0.join(continuation) }) { continuation.resume() }
            }
        }
    }

    /// An armed partition (see ``awaitTick(urgent:)``) has nothing to run after all.
    func disarm() {
        group.withLock { $0.disarm() }?.continuation.resume(returning: .lead)
    }

    /// Runs `request` in the worker's next transaction of its kind, with the requests of its other partitions that
    /// arrive meanwhile; on its own (``alone(_:)``) when that shared transaction failed. `armed`: the partition's
    /// first request since it passed the tick (``awaitTick(urgent:)``).
    func run(_ request: Request, weight: Int = 1, armed: Bool = false) async throws -> Answer {
        let verdict = await withCheckedContinuation { continuation in
            let arrival = group.withLock {
                $0.arrived(Submission(request: request, continuation: continuation), weight: weight, armed: armed)
            }
            switch arrival {
            case .lead: continuation.resume(returning: .lead)
            case .wake(let leader): leader.continuation.resume(returning: .lead)
            case .wait: break
            }
        }
        switch verdict {
        case .answered(let answer): return answer
        case .alone: return try await alone(request)
        case .lead: return try await lead()
        }
    }

    /// Runs `request` in a transaction of its own.
    func alone(_ request: Request) async throws -> Answer {
        try await transaction([request])[0]
    }

    /// Runs one round, whose first request is the caller's (its continuation already resumed), answers the others
    /// and hands the lead on.
    private func lead() async throws -> Answer {
        let round = group.withLock { $0.takeRound(now: now()) }
        let requests = round.map(\.request)
        let outcome: Result<[Answer], any Error>
        do {
            outcome = .success(try await transaction(requests))
        } catch {
            outcome = .failure(error)
            if round.count > 1 {
                logger.info(
                    "a shared transaction failed; its partitions' requests run one by one",
                    metadata: [
                        "worker.requests": "\(what)", "worker.count": "\(round.count)", "worker.error": "\(error)",
                    ])
            }
        }
        for (index, submission) in round.enumerated().dropFirst() {
            switch outcome {
            case .success(let answers): submission.continuation.resume(returning: .answered(answers[index]))
            case .failure: submission.continuation.resume(returning: .alone)
            }
        }
        if case .lead(let next) = group.withLock({ $0.roundEnded() }) {
            next.continuation.resume(returning: .lead)
        }
        switch outcome {
        case .success(let answers): return answers[0]
        case .failure(let error):
            if round.count > 1 { return try await alone(requests[0]) }
            throw error
        }
    }
}

/// A worker's ingestion transactions, shared by its partitions' ingestion stages.
extension TransactionGroup where Request == ApplyBatch, Answer == [AppliedEvent] {
    /// Batches applied to `store`, several in one transaction (``PipelineStore/apply(_:policy:)``) up to `maxWeight`
    /// (``PartitionIngestion/weight(of:)`` summed), at most one transaction every `interval` unless batches are
    /// full; transient failures retried in place, except that a transaction of several events that ran out of time
    /// (``StoreError/ranOutOfTime``) fails with `batch_too_long`: its partitions apply their events again in
    /// smaller transactions (``PartitionIngestion``), since the same work may run out of time again and again on
    /// a starved machine until the watchdog ends the worker.
    static func ingestion(
        store: any PipelineStore, policy: BadgePolicy, maxWeight: Int, interval: Duration, health: WorkerHealth?,
        logger: Logger
    ) -> TransactionGroup {
        TransactionGroup("ingestion", maxWeight: maxWeight, interval: interval, logger: logger) { batches in
            let events = batches.reduce(0) { $0 + $1.events.count }
            // The attempt's own time limit (`Retry.attemptTimeout`) counts as running out of time too.
            return try await Retry.transient(
                "apply", health: health, logger: logger,
                refining: { error in
                    guard error.ranOutOfTime && events > 1 else { return error }
                    return StoreError(
                        code: .batchTooLong, message: "\(events) events in one transaction: \(error)", failure: .other)
                }
            ) {
                try await store.apply(batches, policy: policy)
            }
        }
    }
}
