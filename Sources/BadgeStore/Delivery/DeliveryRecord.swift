/// What one delivery round did with its claimed pushes, recorded in one transaction
/// (``PipelineStore/recordDeliveries(_:)``).
public struct DeliveryRecord: Sendable, Equatable {
    /// A push to try again later.
    public struct Retry: Sendable, Equatable {
        /// The outbox id.
        public var id: Int64
        /// How long after the record is written its next attempt is due: the store writes the database's now plus
        /// this (a worker hands in durations, never its own clock's time).
        public var delay: Duration

        /// Creates a retry.
        public init(id: Int64, delay: Duration) {
            self.id = id
            self.delay = delay
        }
    }

    /// A `badge_version` that reached a device: its token, the user the push was for, and the version.
    public struct Pushed: Sendable, Equatable {
        public var token: String
        public var user: String
        public var version: Int64

        /// Creates a pushed version.
        public init(token: String, user: String, version: Int64) {
            self.token = token
            self.user = user
            self.version = version
        }
    }

    /// Outbox rows of pushes the provider accepted: removed.
    public var sent: [Int64]
    /// The versions the accepted pushes carried: each device's `pushed_version` moves up to the highest of its own
    /// user's (what the push guard of the next claims compares with), in the same statement that removes them.
    public var pushed: [Pushed]
    /// Outbox rows the push guard dropped at the claim (superseded, or to a token that moved to another user):
    /// removed.
    public var dropped: [Int64]
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
        sent: [Int64] = [], pushed: [Pushed] = [], dropped: [Int64] = [], failed: [Int64] = [],
        retries: [Retry] = [], deadTokens: [String] = [], feedback: [TokenFeedback] = []
    ) {
        self.sent = sent
        self.pushed = pushed
        self.dropped = dropped
        self.failed = failed
        self.retries = retries
        self.deadTokens = deadTokens
        self.feedback = feedback
    }

    /// Whether there is nothing to record.
    public var isEmpty: Bool {
        sent.isEmpty && dropped.isEmpty && failed.isEmpty && retries.isEmpty && deadTokens.isEmpty
            && feedback.isEmpty
    }

    /// How many outcomes it holds (a dead token and its feedback count once).
    public var count: Int {
        sent.count + dropped.count + failed.count + retries.count + max(deadTokens.count, feedback.count)
    }

    /// The shortest delay of its retries: how long after the record is written the first of them is due; nil
    /// without retries.
    public var earliestRetry: Duration? { retries.map(\.delay).min() }

    /// Adds what `other` (a later round, of other outbox rows) did, to be recorded together.
    public mutating func add(_ other: DeliveryRecord) {
        sent += other.sent
        pushed += other.pushed
        dropped += other.dropped
        failed += other.failed
        retries += other.retries
        deadTokens += other.deadTokens
        feedback += other.feedback
    }
}

extension DeliveryRecord {
    /// The outbox rows it removes outright: its sent, dropped and failed pushes.
    var removed: [Int64] { sent + dropped + failed }

    /// Whether it only removes rows and moves devices' versions up (the usual round): then it is part of the next
    /// claim's statement, or one statement on its own, rather than a transaction (see `DeliveryQueries.record`).
    var isPlain: Bool { retries.isEmpty && deadTokens.isEmpty && feedback.isEmpty }

    /// The highest version of ``pushed`` for each token and user, in token order.
    var highestPushed: [Pushed] {
        var highest: [String: Pushed] = [:]
        for entry in pushed {
            let key = entry.token + "\u{0}" + entry.user
            if let known = highest[key], known.version >= entry.version { continue }
            highest[key] = entry
        }
        return highest.values.sorted { ($0.token, $0.user) < ($1.token, $1.user) }
    }
}
