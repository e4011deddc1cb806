/// What one delivery round did with its claimed pushes, recorded in one transaction
/// (``BadgeStore/recordDeliveries(_:)``).
public struct DeliveryRecord: Sendable, Equatable {
    /// A push to try again later.
    public struct Retry: Sendable, Equatable {
        /// The outbox id.
        public var id: Int64
        /// How long after the record is written its next attempt is due: the store writes the database's now plus
        /// this (a worker hands in durations, never its own clock's time).
        public var delay: Duration
        /// Its device token, user and `badge_version`: the claim moved the token's pushed version up to the
        /// newest push of the round, which did not go out; recording the retry moves it back to this push's, so
        /// that it and the pushes behind it pass the guard as planned when they go.
        public var token: String
        public var user: String
        public var badgeVersion: Int64

        /// Creates a retry.
        public init(id: Int64, delay: Duration, token: String, user: String, badgeVersion: Int64) {
            self.id = id
            self.delay = delay
            self.token = token
            self.user = user
            self.badgeVersion = badgeVersion
        }
    }

    /// Outbox rows of pushes the provider accepted: removed.
    public var sent: [Int64]
    /// Outbox rows of pushes that failed for good (refused by the provider or the HTTP client, or given up after
    /// the maximum age): removed.
    public var failed: [Int64]
    /// Pushes to try again later: each row gets its next attempt time and one more attempt counted.
    public var retries: [Retry]
    /// Tokens the provider reported dead: deactivated, and their outbox rows removed.
    public var deadTokens: [String]
    /// What the providers said of the dead tokens, to report back to the producers: written into
    /// `token_feedback` in the same transaction as the deactivation (see ``TokenFeedback``).
    public var feedback: [TokenFeedback]

    /// Creates a record.
    public init(
        sent: [Int64] = [], failed: [Int64] = [], retries: [Retry] = [], deadTokens: [String] = [],
        feedback: [TokenFeedback] = []
    ) {
        self.sent = sent
        self.failed = failed
        self.retries = retries
        self.deadTokens = deadTokens
        self.feedback = feedback
    }

    /// Whether there is nothing to record.
    public var isEmpty: Bool {
        sent.isEmpty && failed.isEmpty && retries.isEmpty && deadTokens.isEmpty && feedback.isEmpty
    }

    /// How many outcomes it holds (a dead token and its feedback count once).
    public var count: Int { sent.count + failed.count + retries.count + max(deadTokens.count, feedback.count) }

    /// The shortest delay of its retries: how long after the record is written the first of them is due; nil
    /// without retries.
    public var earliestRetry: Duration? { retries.map(\.delay).min() }

    /// Adds what `other` (a later round, of other outbox rows) did, to be recorded together.
    public mutating func add(_ other: DeliveryRecord) {
        sent += other.sent
        failed += other.failed
        retries += other.retries
        deadTokens += other.deadTokens
        feedback += other.feedback
    }
}

extension DeliveryRecord {
    /// The outbox rows a record that only removes rows removes (its sent and failed pushes), or nil when it also
    /// schedules retries, deactivates tokens or reports them: such a record is one `DELETE` (see `DeliveryQueries.record`).
    var onlyRemovedRows: [Int64]? {
        retries.isEmpty && deadTokens.isEmpty && feedback.isEmpty ? sent + failed : nil
    }
}
