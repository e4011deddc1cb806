/// Exponential backoff with jitter for reconnecting.
public struct AMQPRetryPolicy: Sendable, Hashable {
    /// Wait before the second attempt.
    public var initialDelay: Duration
    /// Upper bound of any wait.
    public var maxDelay: Duration
    /// Growth per attempt.
    public var multiplier: Double
    /// Fraction of each wait that is random (0...1), so a fleet does not reconnect in lockstep.
    public var jitter: Double
    /// Give up after this many attempts; nil retries until cancelled.
    public var maxAttempts: Int?

    public init(
        initialDelay: Duration = .milliseconds(100),
        maxDelay: Duration = .seconds(5),
        multiplier: Double = 2,
        jitter: Double = 0.3,
        maxAttempts: Int? = nil
    ) {
        self.initialDelay = initialDelay
        self.maxDelay = maxDelay
        self.multiplier = multiplier
        self.jitter = jitter
        self.maxAttempts = maxAttempts
    }

    /// The wait after `attempt` failures (1-based), jitter included.
    public func delay(afterAttempt attempt: Int, random: Double = Double.random(in: 0...1)) -> Duration {
        let initial = Double(initialDelay.milliseconds)
        let cap = Double(maxDelay.milliseconds)
        let exponent = Double(max(0, attempt - 1))
        let base = min(cap, initial * pow(multiplier, exponent))
        let jittered = base * (1 - jitter) + base * jitter * random
        return .milliseconds(Int64(jittered.rounded()))
    }
}

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
