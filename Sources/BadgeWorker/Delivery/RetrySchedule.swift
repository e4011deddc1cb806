/// When a push that got a "try again later" answer is tried next: exponential backoff with full jitter, or the
/// provider's `Retry-After` when it gave one. Pure: the random draw is an argument.
struct RetrySchedule: Sendable, Equatable {
    /// The ceiling of the first delay; it doubles with each attempt.
    var initial: Duration
    /// The largest ceiling.
    var maximum: Duration

    /// The delay before the next attempt of a push that failed `attempts` times so far (this failure included),
    /// for a `unit` drawn uniformly from 0..<1: full jitter, uniform below `min(maximum, initial × 2^(attempts−1))`.
    /// A provider's `retryAfter` is honoured as given.
    func delay(attempts: Int, retryAfter: Duration?, unit: Double) -> Duration {
        if let retryAfter { return retryAfter }
        let exponent = min(max(attempts - 1, 0), 30)
        var ceiling = initial
        for _ in 0..<exponent where ceiling < maximum { ceiling = ceiling * 2 }
        return min(ceiling, maximum) * min(max(unit, 0), 1)
    }
}
