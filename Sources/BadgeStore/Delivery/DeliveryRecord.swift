/// What one delivery round did with its claimed pushes, recorded in one transaction
/// (``BadgeStore/recordDeliveries(_:)``).
public struct DeliveryRecord: Sendable, Equatable {
    /// A push to try again later.
    public struct Retry: Sendable, Equatable {
        /// The outbox id.
        public var id: Int64
        /// Its next attempt, in microseconds since the epoch.
        public var at: Int64

        /// Creates a retry.
        public init(id: Int64, at: Int64) {
            self.id = id
            self.at = at
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

    /// Creates a record.
    public init(sent: [Int64] = [], failed: [Int64] = [], retries: [Retry] = [], deadTokens: [String] = []) {
        self.sent = sent
        self.failed = failed
        self.retries = retries
        self.deadTokens = deadTokens
    }

    /// Whether there is nothing to record.
    public var isEmpty: Bool { sent.isEmpty && failed.isEmpty && retries.isEmpty && deadTokens.isEmpty }
}
