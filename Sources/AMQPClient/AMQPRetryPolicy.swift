import BadgeSupport

/// Exponential backoff with jitter for reconnecting: the project's one backoff formula (`Backoff` in
/// BadgeSupport) and a bound on the attempts. The wait after the `n`-th failed attempt is drawn below
/// `min(maxDelay, initialDelay × multiplier^(n−1))`; with the default `jitter` of 1 it is uniform between zero
/// and that ceiling ("full jitter"), so a fleet does not reconnect in lockstep.
public struct AMQPRetryPolicy: Sendable, Hashable {
    /// The formula's settings.
    var backoff: Backoff
    /// Give up after this many attempts; nil retries until cancelled.
    public var maxAttempts: Int?

    /// The ceiling of the wait before the second attempt.
    public var initialDelay: Duration {
        get { backoff.initial }
        set { backoff.initial = newValue }
    }
    /// Upper bound of any wait.
    public var maxDelay: Duration {
        get { backoff.maximum }
        set { backoff.maximum = newValue }
    }
    /// Growth of the ceiling per attempt.
    public var multiplier: Double {
        get { backoff.multiplier }
        set { backoff.multiplier = newValue }
    }
    /// Fraction of each wait that is random (0...1): 1 is full jitter, 0 waits the whole ceiling.
    public var jitter: Double {
        get { backoff.jitter }
        set { backoff.jitter = newValue }
    }

    /// Creates a policy; the defaults wait up to 100 ms after the first failure, doubling up to 5 s, with full
    /// jitter, and retry until cancelled.
    public init(
        initialDelay: Duration = .milliseconds(100),
        maxDelay: Duration = .seconds(5),
        multiplier: Double = 2,
        jitter: Double = 1,
        maxAttempts: Int? = nil
    ) {
        self.backoff = Backoff(initial: initialDelay, maximum: maxDelay, multiplier: multiplier, jitter: jitter)
        self.maxAttempts = maxAttempts
    }

    /// The wait after `attempt` failures (1-based) for a `random` draw from 0...1, jitter included.
    public func delay(afterAttempt attempt: Int, random: Double = Double.random(in: 0...1)) -> Duration {
        backoff.delay(attempt: attempt, unit: random)
    }
}
