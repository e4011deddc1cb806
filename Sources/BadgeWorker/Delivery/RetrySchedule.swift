import BadgeSupport

/// When a push that got a "try again later" answer is tried next: the project's backoff (`Backoff`, full jitter),
/// or the provider's `Retry-After` when it gave one. Pure: the random draw is an argument.
struct RetrySchedule: Sendable, Equatable {
    /// The formula: its ceiling starts at the delivery's initial backoff and doubles up to its maximum.
    var backoff: Backoff

    /// A schedule whose first ceiling is `initial`, doubling with each attempt up to `maximum`.
    init(initial: Duration, maximum: Duration) {
        backoff = Backoff(initial: initial, maximum: maximum)
    }

    /// The delay before the next attempt of a push that failed `attempts` times so far (this failure included),
    /// for a `unit` drawn uniformly from 0..<1: full jitter, uniform below `min(maximum, initial × 2^(attempts−1))`.
    /// A provider's `retryAfter` is honoured as given.
    func delay(attempts: Int, retryAfter: Duration?, unit: Double) -> Duration {
        retryAfter ?? backoff.delay(attempt: attempts, unit: unit)
    }
}
