import BadgeCore
import BadgeDelivery
import BadgeStore
import BadgeSupport
import Logging
import Metrics

/// The delivery stage's rounds: claim many due pushes in one transaction, send them concurrently (one device's
/// pushes in order, see ``DeliveryRound``), record every outcome in one transaction.
///
/// A push sent but not recorded when the worker dies is sent again by whoever claims it next, with the same
/// `apns-id` (contract guarantee 2): the window is one round.
struct DeliveryRounds: Sendable {
    let store: any PipelineStore
    let sender: PushSender
    let builder: PushPayloadBuilder
    /// Pushes in flight at once, per round.
    let concurrency: Int
    /// The deployment's badge policy, for alerts the push guard rebuilds.
    let policy: BadgePolicy
    /// When a push that got "try again later" is tried next (see ``DeliveryRound``).
    let backoff: Backoff
    let maxAge: Duration
    /// Most pushes claimed by one round.
    let roundSize: Int
    /// Hears whether the database answered (see `Retry`).
    let health: WorkerHealth?
    /// When to log pushes refused because their provider is not configured (one line per provider, then one every
    /// ten minutes with the count), shared by the worker's partitions.
    let notConfiguredLog: SharedRefusalThrottle
    /// Rung once a record with dead tokens is written: their feedback is in the database, to publish.
    let feedback: FeedbackPublisher?
    /// The worker's records of outcomes (see ``record(_:)``), shared by its partitions; nil: each on its own.
    let records: TransactionGroup<DeliveryRecord, Void>?
    let logger: Logger

    /// The reason of a push refused unsent because the deployment does not deliver to its provider: a label of
    /// `badgepipe_pushes_refused_total`.
    static let providerNotConfigured = AppRegistry.Unserved.Code.providerNotConfigured.rawValue

    init(
        store: any PipelineStore, sender: PushSender, builder: PushPayloadBuilder, concurrency: Int,
        policy: BadgePolicy,
        backoff: Backoff = .pushRetry,
        maxAge: Duration = .seconds(24 * 3600), roundSize: Int = 256, health: WorkerHealth? = nil,
        notConfiguredLog: SharedRefusalThrottle = SharedRefusalThrottle(), feedback: FeedbackPublisher? = nil,
        recordGathering: Duration = .zero, logger: Logger
    ) {
        self.store = store
        self.sender = sender
        self.builder = builder
        self.concurrency = concurrency
        self.policy = policy
        self.backoff = backoff
        self.maxAge = maxAge
        self.roundSize = roundSize
        self.health = health
        self.notConfiguredLog = notConfiguredLog
        self.feedback = feedback
        self.records = DeliveryRounds.recordGroup(
            store: store, gathering: recordGathering, health: health, logger: logger)
        self.logger = logger
    }

    /// Most outcomes written by one shared record: 4,096 rows.
    static let maxRecordWeight = 4096

    /// The group in which the worker's partitions write their records (``record(_:)``), or nil when `gathering`
    /// is zero.
    ///
    /// Why: the pushes an ingestion transaction claims for several partitions go out at once, in a round of each
    /// partition, and each round's outcomes would otherwise be recorded by a statement of their own, at about the
    /// same moment: a large share of the statements PostgreSQL runs, each with its round trip and its commit.
    private static func recordGroup(
        store: any PipelineStore, gathering: Duration, health: WorkerHealth?, logger: Logger
    ) -> TransactionGroup<DeliveryRecord, Void>? {
        guard gathering > .zero else { return nil }
        return TransactionGroup("delivery record", maxWeight: maxRecordWeight, gathering: gathering, logger: logger) {
            records in
            try await write(
                records.reduce(into: DeliveryRecord()) { $0.add($1) }, to: store, health: health, logger: logger)
            return records.map { _ in () }
        }
    }

    /// Sends everything of the outbox (of one partition, or all) that is due, round after round, until nothing
    /// due is left: what a previous run or a previous owner of the partition committed but did not get to send.
    ///
    /// With `term`, every round is claimed under its lease, and each push sent only while the term is valid: once
    /// the partition has a new owner, this worker sends nothing more of it (the claim, or the check before
    /// sending, fails with `lease_lost`).
    func drainOutbox(partition: Int?, term: LeaseTerm? = nil) async throws {
        var pending = DeliveryRecord()
        while true {
            let round = try await deliverRound(partition: partition, term: term, recording: pending)
            pending = round.record
            if round.claimed == 0 && !round.moreDue { return }
        }
    }

    /// What one round did.
    struct RoundResult {
        /// The outbox ids of the pushes claimed.
        var ids: [Int64]
        /// Pushes claimed.
        var claimed: Int { ids.count }
        /// The claim reached the round's size, or took a full share of some device (`ClaimedPushes.reachedLimit`):
        /// more may be due at once.
        var moreDue: Bool
        /// When the claim returned, on the monotonic clock: the claim had written the outcomes it recorded by then.
        var claimedAt: ContinuousClock.Instant
        /// When the earliest retry the round recorded itself is due, on the monotonic clock (its delay counted from
        /// when the record was written), if any. Retries in ``record`` are not written yet: they are due their
        /// delay after they are (``DeliveryRecord/earliestRetry``).
        var nextRetryAt: ContinuousClock.Instant?
        /// The round's outcomes, not recorded yet: the caller passes them to the next round, whose claim records
        /// them in its own transaction, or records them itself when it stops.
        var record: DeliveryRecord
        /// What the partition's outbox held beyond the claim, as the claim read it (`ClaimedPushes.ahead`).
        var ahead: OutboxAhead? = nil
    }

    /// Records `pending` (the previous round's outcomes) with the claim of one round of due pushes, sends them and
    /// returns what happened. A round that ends with an error, or with pushes that finished after the term, records
    /// its outcomes itself before it goes on.
    func deliverRound(partition: Int?, term: LeaseTerm?, recording pending: DeliveryRecord) async throws -> RoundResult
    {
        let (limit, policy) = (roundSize, policy)
        let claim: ClaimedPushes
        do {
            claim = try await Retry.transient("claim pushes", health: health, logger: logger) { [store] in
                try await store.claimPushes(
                    partition: partition, limit: limit, policy: policy, lease: term?.lease,
                    skipClaimedBefore: term?.skipClaimedBefore, recording: pending)
            }
        } catch {
            // What went out did go out: record it even though the partition is someone else's now.
            try await record(pending)
            throw error
        }
        if !pending.feedback.isEmpty { feedback?.ring() }
        report(claim.refused)
        let claimed = claim.pushes
        let claimedAt = ContinuousClock.now
        if claimed.isEmpty {
            return RoundResult(
                ids: [], moreDue: claim.reachedLimit, claimedAt: claimedAt, nextRetryAt: nil,
                record: DeliveryRecord(dropped: claim.dropped), ahead: claim.ahead)
        }
        WorkerMetrics.pushesClaimed.increment(by: claimed.count)
        var round = try await send(
            claimed, dropped: claim.dropped, claimedAt: claimedAt, term: term, moreDue: claim.reachedLimit)
        round.ahead = claim.ahead
        return round
    }

    /// Sends one round's claimed pushes (one device's in order, see ``DeliveryRound``), claimed at `claimedAt`, and
    /// returns what happened; the rows the claim `dropped` are removed with the round's outcomes.
    private func send(
        _ claimed: [ClaimedPush], dropped: [Int64], claimedAt: ContinuousClock.Instant, term: LeaseTerm?,
        moreDue: Bool
    ) async throws -> RoundResult {
        var round = DeliveryRound(
            claimed, concurrency: concurrency, backoff: backoff, maxAge: maxAge, claimedAt: claimedAt)
        var failure: (any Error)?
        await withTaskGroup(of: (ClaimedPush, DeliveryRound.Result, (any Error)?).self) { group in
            func startReady() {
                while let push = round.next() {
                    group.addTask { await attempt(push, term: term) }
                }
            }
            startReady()
            while let (push, result, error) = await group.next() {
                if let error, failure == nil { failure = error }
                let now = ContinuousClock.now
                if case .accepted = result {
                    // From the commit that planned it: its age by the database's clock when claimed, and since.
                    WorkerMetrics.pushLatency.record(duration: round.age(of: push, at: now) ?? (now - claimedAt))
                }
                round.finished(push, result, now: now, unit: Double.random(in: 0..<1))
                startReady()
            }
        }
        report(round.tally)
        var outcomes = round.record
        outcomes.dropped = dropped
        if failure != nil || (term != nil && !round.late.isEmpty) {
            try await record(outcomes)
            // Its retries are due at most their delay after now (the database wrote them a moment ago).
            let written = ContinuousClock.now
            if let term, !round.late.isEmpty { try await afterLateSends(round.late, term: term) }
            if let failure { throw failure }
            return RoundResult(
                ids: claimed.map(\.id), moreDue: moreDue, claimedAt: claimedAt,
                nextRetryAt: outcomes.earliestRetry.map { written + $0 }, record: DeliveryRecord())
        }
        return RoundResult(
            ids: claimed.map(\.id), moreDue: moreDue, claimedAt: claimedAt, nextRetryAt: nil, record: outcomes)
    }

    /// What waits in `partition`'s outbox beyond what the last claim took (see `PipelineStore.outboxAhead`), read
    /// once its outcomes are recorded: what the delivery loop sleeps until.
    func ahead(partition: Int, term: LeaseTerm?) async throws -> OutboxAhead {
        try await Retry.transient("look ahead in the outbox", health: health, logger: logger) { [store] in
            try await store.outboxAhead(partition: partition)
        }
    }

    /// Records a round's outcomes (outside a claim): with those of the worker's other partitions that come within
    /// the gathering moment, in one transaction (a statement, when all of them only remove rows), when the worker
    /// gathers its records (``records``); on their own otherwise, or when the shared record failed.
    func record(_ record: DeliveryRecord) async throws {
        guard !record.isEmpty else { return }
        if let records {
            await records.awaitTick(urgent: false)
            try await records.run(record, weight: record.count, armed: true)
        } else {
            try await Self.write(record, to: store, health: health, logger: logger)
        }
        if !record.feedback.isEmpty { feedback?.ring() }
    }

    /// Writes `record` in a transaction of its own, retrying transient failures.
    private static func write(
        _ record: DeliveryRecord, to store: any PipelineStore, health: WorkerHealth?, logger: Logger
    ) async throws {
        try await Retry.transient("record deliveries", health: health, logger: logger) {
            try await store.recordDeliveries(record)
        }
    }

    /// One attempt at one push, with its result for the round (and the error that stopped it, if any).
    private func attempt(
        _ claimed: ClaimedPush, term: LeaseTerm?
    ) async -> (
        ClaimedPush, DeliveryRound.Result, (any Error)?
    ) {
        let push = claimed.push
        if push.badgeVersion != claimed.outbox.push.badgeVersion {
            logger.info(
                "stale alert rebuilt with the current badge",
                metadata: [
                    "push.token": "\(push.token.prefix(8))", "push.event_id": "\(push.eventID)",
                    "push.badge_version": "\(push.badgeVersion)",
                ])
        }
        // Claimed under the lease; sent only while this worker is sure it still holds it: inside its term's send
        // window (see `LeaseTerm`). If not, the push stays in the outbox, claimed but unsent, and the partition's
        // new owner sends it.
        let request: PushRequest
        switch sender.app(for: push) {
        case .failure(let unserved):
            return (claimed, refusedUnsent(push, reason: unserved.message), nil)
        case .success(let app):
            var built = builder.build(push, defaultTopic: app.apns?.topics.first, fcmProject: app.fcm?.project)
            built.app = app.name
            if push.provider == .apns, push.environment == nil { built.environment = app.apns?.environment }
            request = built
        }
        do {
            var outcome: PushOutcome
            repeat {
                // Before each attempt the term is made valid (the lease renewed if it ran out); an attempt whose
                // window closed before its body was written is tried again the same way.
                if let term { try await renewIfRunOut(term) }
                outcome = try await sender.send(request, window: term?.window)
            } while outcome == .windowClosed
            switch outcome {
            case .accepted:
                return (claimed, .accepted(late: term.map { !$0.isValid } ?? false), nil)
            case .deadToken(_, let reason, let timestamp):
                WorkerMetrics.deadTokens.increment()
                logger.info(
                    "token unregistered, deactivating",
                    metadata: ["push.token": "\(push.token.prefix(8))", "push.reason": "\(reason)"])
                return (
                    claimed,
                    .deadToken(
                        reason: reason, timestampMilliseconds: timestamp, app: sender.servesApps ? request.app : nil),
                    nil
                )
            case .rejected(let status, let reason):
                logger.warning(
                    "push refused for good, dropped",
                    metadata: [
                        "push.token": "\(push.token.prefix(8))", "push.event_id": "\(push.eventID)",
                        "push.status": "\(status)", "push.reason": "\(reason)",
                    ])
                return (claimed, .rejected(reason: reason), nil)
            case .retry(let reason, let retryAfter):
                return (claimed, .retry(reason: reason, retryAfter: retryAfter), nil)
            case .configurationError(let status, let reason):
                logger.error(
                    "the provider refused our credentials or configuration; the push is kept and retried",
                    metadata: [
                        "push.provider": "\(push.provider.rawValue)", "push.status": "\(status)",
                        "push.reason": "\(reason)",
                    ])
                return (claimed, .configurationError(reason: reason), nil)
            case .notConfigured(let reason):
                return (claimed, refusedUnsent(push, reason: reason), nil)
            case .windowClosed:
                preconditionFailure("a closed window is tried again above")
            }
        } catch {
            return (claimed, .stopped, error)
        }
    }

    /// A push not sent because its provider or its app is not configured: counted, logged once per provider and
    /// app (then every ten minutes with the count), recorded as failed; its device is kept.
    private func refusedUnsent(_ push: PlannedPush, reason: String) -> DeliveryRound.Result {
        WorkerMetrics.pushesRefused(reason: Self.providerNotConfigured).increment()
        let key = push.provider.rawValue + (push.app.map { " app \($0)" } ?? "")
        if let (key, count) = notConfiguredLog.note(key) {
            logger.warning(
                """
                pushes refused unsent: the deployment does not deliver to their provider or app; their devices are \
                kept, and served once it is configured
                """,
                metadata: [
                    "push.provider": "\(key)", "push.reason": "\(Self.providerNotConfigured)",
                    "push.detail": "\(reason)", "push.refused": "\(count)",
                ])
        }
        return .notConfigured(reason: reason)
    }

    private func report(_ tally: DeliveryRound.Tally) {
        if tally.retries > 0 {
            WorkerMetrics.pushRetries.increment(by: tally.retries)
            logger.debug(
                "pushes to try again later",
                metadata: [
                    "push.retries": "\(tally.retries)", "push.held_back": "\(tally.heldBack)",
                    "push.reason": "\(tally.retryReason ?? "")",
                ])
        }
        if tally.rejected > 0 { WorkerMetrics.pushesRejected.increment(by: tally.rejected) }
        if tally.givenUp > 0 {
            WorkerMetrics.pushesGivenUp.increment(by: tally.givenUp)
            logger.error(
                "pushes given up after failing for longer than the maximum age",
                metadata: ["push.given_up": "\(tally.givenUp)", "push.max_age": "\(maxAge)"])
        }
    }

    /// Outbox rows the claim could not read and moved to `refused_pushes`: each counted and logged once.
    private func report(_ refused: [RefusedPush]) {
        for refusal in refused {
            WorkerMetrics.pushesRefused(reason: refusal.reason.rawValue).increment()
            logger.error(
                "an outbox row could not be read: moved to refused_pushes, not sent",
                metadata: [
                    "push.outbox_id": "\(refusal.outboxID)", "push.reason": "\(refusal.reason)",
                    "push.detail": "\(refusal.detail)",
                    "push.partition": "\(refusal.partition.map(String.init) ?? "none")",
                ])
        }
    }

    /// Makes `term` valid for the next attempt: at once while it is, otherwise by renewing the lease in the
    /// database (retried while the database fails transiently); throws `lease_lost` when the lease is gone. The
    /// common case, before every push, is checked here, outside `Retry.transient`, whose time limit starts a task
    /// group of two child tasks, one of them asleep on a 10 s timer, for every call.
    private func renewIfRunOut(_ term: LeaseTerm) async throws {
        if term.isValid { return }
        try await Retry.transient("renew lease", health: health, logger: logger) { [term, store] in
            try await term.ensureValid { lease in
                try await store.renewLease(lease, ttlMilliseconds: term.ttlMilliseconds)
            }
        }
    }

    /// Pushes went out but their requests finished only after this worker's term on the lease: it was frozen with
    /// them on their way, and they may have reached their devices after newer pushes from the partition's new
    /// owner. If the lease is still this worker's (renewed now), nobody else sent anything; if not, it asks the
    /// owner, through the partition's outbox, to send each device's current badge after them, and leaves the
    /// partition (`lease_lost`).
    private func afterLateSends(_ late: [ClaimedPush], term: LeaseTerm) async throws {
        do {
            try await renewIfRunOut(term)
        } catch let error as StoreError where error.code == .leaseLost {
            for claimed in late {
                let planned = try await Retry.transient("refresh badge", health: health, logger: logger) {
                    [store, policy] in
                    try await store.refreshBadge(after: claimed.push, partition: term.lease.partition, policy: policy)
                }
                logger.warning(
                    "a push finished after this worker lost its partition and may have landed late; refresh left to the owner",
                    metadata: [
                        "push.token": "\(claimed.push.token.prefix(8))",
                        "push.badge_version": "\(claimed.push.badgeVersion)", "push.refresh_planned": "\(planned)",
                    ])
            }
            throw error
        }
    }
}
