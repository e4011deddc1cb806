/// Capped exponential backoff with jitter: the one formula for every wait before a retry (reconnecting to the
/// broker, a store call retried in place, a push that got "try again later").
///
/// The wait after the `n`-th failure is drawn below a ceiling that grows by `multiplier` per attempt and stops at
/// `maximum`:
///
///     ceiling(n) = min(maximum, initial × multiplier^(n−1))
///     delay(n)   = ceiling(n) × (1 − jitter × (1 − unit))      unit uniform in 0...1
///
/// With `jitter` 1, the default, this is "full jitter" as the AWS Architecture Blog's "Exponential Backoff And
/// Jitter" describes it: a delay uniform between zero and the ceiling, so that clients failing together do not
/// retry together. A smaller `jitter` keeps a floor of `(1 − jitter) × ceiling` (0 means no randomness at all);
/// only `AMQPRetryPolicy.jitter`, public API of the AMQP client, sets it.
///
/// Pure: ``delay(attempt:unit:)`` takes the random draw as an argument, so tests pin delays by feeding `unit`.
public struct Backoff: Sendable, Hashable {
    /// The ceiling of the first wait.
    public var initial: Duration
    /// The largest ceiling.
    public var maximum: Duration
    /// Growth of the ceiling per attempt (at least 1).
    public var multiplier: Double
    /// The fraction of each ceiling that is random, 0...1: 1 is full jitter.
    public var jitter: Double

    /// Creates a backoff; the defaults double the ceiling and draw with full jitter.
    public init(initial: Duration, maximum: Duration, multiplier: Double = 2, jitter: Double = 1) {
        self.initial = initial
        self.maximum = maximum
        self.multiplier = multiplier
        self.jitter = jitter
    }

    /// The ceiling of the wait after `attempt` failures (1-based): `min(maximum, initial × multiplier^(attempt−1))`.
    public func ceiling(attempt: Int) -> Duration {
        let growth = max(multiplier, 1)
        // A whole multiplier grows the ceiling in exact integer steps.
        let wholeGrowth = growth < 1024 && growth.rounded() == growth ? Int(growth) : nil
        var ceiling = min(initial, maximum)
        // Bounded, so that a huge attempt count does not loop: 64 doublings pass any useful ceiling.
        for _ in 0..<min(max(attempt - 1, 0), 64) {
            guard ceiling < maximum else { break }
            ceiling = min(wholeGrowth.map { ceiling * $0 } ?? ceiling * growth, maximum)
        }
        return ceiling
    }

    /// The wait after `attempt` failures (1-based) for a `unit` drawn uniformly from 0...1 (clamped to it).
    public func delay(attempt: Int, unit: Double) -> Duration {
        let jitter = min(max(self.jitter, 0), 1)
        let unit = min(max(unit, 0), 1)
        let factor = 1 - jitter * (1 - unit)
        return factor == 1 ? ceiling(attempt: attempt) : ceiling(attempt: attempt) * factor
    }

    /// The wait after `attempt` failures (1-based), with a fresh random draw.
    public func delay(attempt: Int) -> Duration {
        delay(attempt: attempt, unit: Double.random(in: 0...1))
    }
}

/// Every retry wait of the product, written once: each place that retries takes its ``Backoff`` from here (the push
/// retry's is the default of settings that `--initial-backoff` and `--max-backoff` change).
extension Backoff {
    /// A store call retried in place after a connection failure (a dropped connection, a deadlock, a timeout):
    /// below 50 ms, doubling up to 2 s.
    public static let storeConnectionFailure = Backoff(initial: .milliseconds(50), maximum: .seconds(2))

    /// A store call while the database cannot write (read-only, disk full, shutting down): below 250 ms, doubling up
    /// to 5 s, so that a recovery is noticed within seconds without hammering a database that is failing over.
    public static let storeUnavailable = Backoff(initial: .milliseconds(250), maximum: .seconds(5))

    /// A store connection opened again after it failed (PostgreSQL's `LISTEN` for outbox wake-ups): below 100 ms,
    /// doubling up to 5 s.
    public static let storeReconnect = Backoff(initial: .milliseconds(100), maximum: .seconds(5))

    /// Connecting to the broker again (`AMQPRetryPolicy`'s defaults): below 100 ms, doubling up to 5 s.
    public static let brokerReconnect = Backoff(initial: .milliseconds(100), maximum: .seconds(5))

    /// A push a provider answered "try again later" without a `Retry-After`: below 250 ms, doubling up to 30 s.
    public static let pushRetry = Backoff(initial: .milliseconds(250), maximum: .seconds(30))

    /// Dead-token reports published again after a failed pass: below 1 s, doubling up to `ceiling` (1 s at least).
    public static func feedbackRetry(upTo ceiling: Duration) -> Backoff {
        Backoff(initial: .seconds(1), maximum: max(ceiling, .seconds(1)))
    }

    /// Events the broker refused, sent again by `badgepipe publish`: 100 ms after the first refusal in a row,
    /// doubling to 2 s, without jitter (one publisher, nobody to fall out of step with).
    public static let publishRefused = Backoff(initial: .milliseconds(100), maximum: .seconds(2), jitter: 0)
}
