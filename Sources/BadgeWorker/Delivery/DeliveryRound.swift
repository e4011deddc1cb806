import BadgeStore
import BadgeSupport

/// One delivery round as a state machine: it takes the pushes claimed for the round and the result of each
/// attempt, and answers which push may start next and, at the end, what to record. No I/O: `DeliveryRounds` drives
/// it, and the tests drive it directly.
///
/// Rules:
/// - A device's (token's) pushes go one after another, in outbox order; different tokens go concurrently, at most
///   `concurrency` at a time.
/// - Accepted: recorded as sent, with the version it carried to its device. Refused for good (by the provider or the HTTP client), or refused unsent because
///   the deployment does not deliver to its provider: recorded as failed, and the token's next push goes on.
/// - A dead token: recorded for deactivation, which removes its other pushes too, with what the provider said
///   (``DeliveryRecord/feedback``), reported back to the producers once recorded.
/// - Try again later (429, 5xx, timeout, network, or a configuration error such as 401/403): the push gets the
///   delay of its next attempt (``backoff``, or the provider's `Retry-After`; the store makes it due that long after it writes the record, by
///   the database's clock) and the token's later pushes of the round wait (they stay in the outbox, behind it);
///   once a push is older than `maxAge` it is given up instead (recorded as failed). Its age is the one the claim
///   read by the database's clock (``OutboxPush/age``) plus the time since the claim on this worker's monotonic
///   clock: a worker's wall clock plays no part.
/// - Stopped (the lease is gone, or the task is ending): nothing more starts; what did not go out stays in the
///   outbox for whoever owns the partition next.
struct DeliveryRound {
    /// How one attempt ended.
    enum Result: Equatable {
        /// Accepted; `late` when it finished after this worker's term on the partition's lease ran out.
        case accepted(late: Bool)
        /// The token is dead; `timestampMilliseconds` is APNs's 410 timestamp, when it gave one; `app` the app it
        /// was sent for, when the deployment names apps.
        case deadToken(reason: String, timestampMilliseconds: Int64? = nil, app: String? = nil)
        case rejected(reason: String)
        case retry(reason: String, retryAfter: Duration?)
        case configurationError(reason: String)
        /// Not sent: the deployment does not deliver to the push's provider (`provider_not_configured`).
        case notConfigured(reason: String)
        /// Nothing was sent and the round must stop.
        case stopped
    }

    /// The round's counts, for logs and metrics.
    struct Tally: Equatable {
        var sent = 0
        var rejected = 0
        var deadTokens = 0
        var retries = 0
        var givenUp = 0
        var configurationErrors = 0
        var notConfigured = 0
        var heldBack = 0
        /// Why the round's first retried push failed (the others of a bad hour fail alike), for the log.
        var retryReason: String?
    }

    let concurrency: Int
    /// When a push that got "try again later" without a `Retry-After` is tried next.
    let backoff: Backoff
    /// The age after which a failing push is given up.
    let maxAge: Duration
    /// When the round's pushes were claimed, on the monotonic clock.
    let claimedAt: ContinuousClock.Instant
    private var queues: [String: [ClaimedPush]] = [:]
    private var ready: [String] = []
    private var readyIndex = 0
    private var inFlight: Set<String> = []
    private(set) var stopped = false
    /// What to record when the round is over.
    private(set) var record = DeliveryRecord()
    /// Accepted pushes that finished after the term ran out.
    private(set) var late: [ClaimedPush] = []
    private(set) var tally = Tally()

    /// A round of `claimed`, claimed at `claimedAt`.
    init(
        _ claimed: [ClaimedPush], concurrency: Int, backoff: Backoff, maxAge: Duration,
        claimedAt: ContinuousClock.Instant
    ) {
        self.concurrency = max(1, concurrency)
        self.backoff = backoff
        self.maxAge = maxAge
        self.claimedAt = claimedAt
        for push in claimed {
            let token = push.push.token
            if queues[token] == nil { ready.append(token) }
            queues[token, default: []].append(push)
        }
        for token in queues.keys { queues[token]?.reverse() }
    }

    /// The next push to start now, or nil when none may (all tokens busy or done, the concurrency bound reached,
    /// or the round stopped).
    mutating func next() -> ClaimedPush? {
        guard !stopped, inFlight.count < concurrency, readyIndex < ready.count else { return nil }
        let token = ready[readyIndex]
        readyIndex += 1
        guard let push = queues[token]?.popLast() else { return next() }
        inFlight.insert(token)
        return push
    }

    /// Whether every started push finished and nothing more will start.
    var isFinished: Bool { inFlight.isEmpty && (stopped || readyIndex >= ready.count) }

    /// The result of `push`'s attempt, at `now` (on the monotonic clock, like ``claimedAt``); `unit` is a uniform
    /// draw from 0..<1 for the retry jitter.
    mutating func finished(_ push: ClaimedPush, _ result: Result, now: ContinuousClock.Instant, unit: Double) {
        let token = push.push.token
        inFlight.remove(token)
        var goOn = true
        switch result {
        case .accepted(let wasLate):
            record.sent.append(push.id)
            record.pushed.append(
                DeliveryRecord.Pushed(token: token, user: push.push.recipient, version: push.push.badgeVersion))
            tally.sent += 1
            if wasLate { late.append(push) }
        case .rejected:
            record.failed.append(push.id)
            tally.rejected += 1
        case .notConfigured:
            record.failed.append(push.id)
            tally.notConfigured += 1
        case .deadToken(let reason, let timestamp, let app):
            record.deadTokens.append(token)
            record.feedback.append(
                TokenFeedback(
                    token: token, provider: push.push.provider, app: app, reason: reason,
                    providerTimestamp: timestamp.map { $0 * 1000 }))
            tally.deadTokens += 1
            goOn = false
        case .retry(let reason, let retryAfter):
            if tally.retryReason == nil { tally.retryReason = reason }
            goOn = later(push, retryAfter: retryAfter, now: now, unit: unit)
        case .configurationError:
            tally.configurationErrors += 1
            goOn = later(push, retryAfter: nil, now: now, unit: unit)
        case .stopped:
            stopped = true
            goOn = false
        }
        if goOn, !(queues[token]?.isEmpty ?? true) {
            ready.append(token)
        } else {
            queues[token] = []
        }
    }

    /// How old `push` is at `now`: the age its claim read by the database's clock, plus the time since the claim
    /// on the monotonic clock; nil without that reading (a row from before planning times were recorded): such a push is not given up in this round.
    func age(of push: ClaimedPush, at now: ContinuousClock.Instant) -> Duration? {
        push.outbox.age.map { $0 + max(.zero, now - claimedAt) }
    }

    /// Schedules `push`'s next attempt, or gives it up once it is older than `maxAge`; returns whether the token's
    /// next push may go on (only after giving up: a scheduled push holds back the later ones).
    private mutating func later(
        _ push: ClaimedPush, retryAfter: Duration?, now: ContinuousClock.Instant, unit: Double
    ) -> Bool {
        if let age = age(of: push, at: now), age >= maxAge {
            record.failed.append(push.id)
            tally.givenUp += 1
            return true
        }
        // A provider's `Retry-After` is honoured as given (capped where it is parsed); otherwise full jitter below
        // the backoff's ceiling for this attempt.
        let delay = retryAfter ?? backoff.delay(attempt: push.outbox.attempts + 1, unit: unit)
        record.retries.append(
            DeliveryRecord.Retry(id: push.id, delay: max(delay, .microseconds(1))))
        tally.retries += 1
        tally.heldBack += queues[push.push.token]?.count ?? 0
        return false
    }
}
