import Logging
import Synchronization

/// Transactions shared by one worker's partitions: requests of the same kind that its partitions' stages make at
/// the same time (their ingestion batches, see ``IngestionGroup``) run as one transaction (``CommitGroup``), so the worker pays
/// one transaction's fixed cost (its round trips, its commit, its lease check) for all of them instead of one per
/// partition.
///
/// Each request's answer is exactly what its own transaction would have given. A shared transaction that fails is
/// nobody's answer: every request of it is run again on its own (``run(_:weight:)`` returns nil and the caller
/// calls ``alone(_:)``), so a lost lease, or data the database refuses, fails only the partition it belongs to.
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

    private let group: Mutex<CommitGroup<Submission>>
    /// What the requests are, for the log.
    private let what: String
    private let shared: @Sendable ([Request]) async throws -> [Answer]
    private let single: @Sendable (Request) async throws -> Answer
    private let logger: Logger

    /// A group of `what` requests: `shared` runs several in one transaction (answers in request order), `alone`
    /// runs one in its own; both retry transient failures themselves.
    init(
        _ what: String, maxWeight: Int, logger: Logger,
        shared: @escaping @Sendable ([Request]) async throws -> [Answer],
        alone: @escaping @Sendable (Request) async throws -> Answer
    ) {
        self.group = Mutex(CommitGroup(maxWeight: maxWeight))
        self.what = what
        self.shared = shared
        self.single = alone
        self.logger = logger
    }

    /// Runs `request` in the worker's next transaction of its kind, with the requests of its other partitions that
    /// arrive meanwhile. Returns nil when that shared transaction failed: then the caller runs it ``alone(_:)``.
    func run(_ request: Request, weight: Int = 1) async throws -> Answer? {
        let verdict = await withCheckedContinuation { continuation in
            let arrival = group.withLock {
                $0.arrived(Submission(request: request, continuation: continuation), weight: weight)
            }
            if arrival == .lead { continuation.resume(returning: .lead) }
        }
        switch verdict {
        case .answered(let answer): return answer
        case .alone: return nil
        case .lead: return try await lead()
        }
    }

    /// Runs `request` in a transaction of its own.
    func alone(_ request: Request) async throws -> Answer {
        try await single(request)
    }

    /// Runs one round, whose first request is the caller's (its continuation already resumed), answers the others
    /// and hands the lead on.
    private func lead() async throws -> Answer? {
        let round = group.withLock { $0.takeRound() }
        let requests = round.map(\.request)
        let outcome: Result<[Answer], any Error>
        do {
            outcome = .success(round.count == 1 ? [try await single(requests[0])] : try await shared(requests))
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
            if round.count > 1 { return nil }
            throw error
        }
    }
}
