import BadgeSupport

/// Exponential backoff with jitter for reconnecting: the project's one backoff formula (`Backoff` in
/// BadgeSupport) and a bound on the attempts. The wait after the `n`-th failed attempt is drawn below
/// `min(maxDelay, initialDelay × multiplier^(n−1))`; with the default `jitter` of 1 it is uniform between zero
/// and that ceiling ("full jitter"), so a fleet does not reconnect in lockstep.
public struct AMQPRetryPolicy: Sendable, Hashable {
    /// The ceiling of the wait before the second attempt.
    public var initialDelay: Duration
    /// Upper bound of any wait.
    public var maxDelay: Duration
    /// Growth of the ceiling per attempt.
    public var multiplier: Double
    /// Fraction of each wait that is random (0...1): 1 is full jitter, 0 waits the whole ceiling.
    public var jitter: Double
    /// Give up after this many attempts; nil retries until cancelled.
    public var maxAttempts: Int?

    /// Creates a policy; the defaults wait up to 100 ms after the first failure, doubling up to 5 s, with full
    /// jitter, and retry until cancelled.
    public init(
        initialDelay: Duration = Backoff.brokerReconnect.initial,
        maxDelay: Duration = Backoff.brokerReconnect.maximum,
        multiplier: Double = 2,
        jitter: Double = 1,
        maxAttempts: Int? = nil
    ) {
        self.initialDelay = initialDelay
        self.maxDelay = maxDelay
        self.multiplier = multiplier
        self.jitter = jitter
        self.maxAttempts = maxAttempts
    }

    /// The waits as the project's one backoff formula.
    var backoff: Backoff {
        Backoff(initial: initialDelay, maximum: maxDelay, multiplier: multiplier, jitter: jitter)
    }

    /// The wait after `attempt` failures (1-based) for a `random` draw from 0...1, jitter included.
    public func delay(afterAttempt attempt: Int, random: Double = Double.random(in: 0...1)) -> Duration {
        backoff.delay(attempt: attempt, unit: random)
    }
}
