/// A partition's prefetch, bounded in bytes as well as in messages, as a state machine: from the sizes of the
/// batches it takes, it decides the consumer's prefetch count (`basic.qos`), so that the bodies a partition holds
/// unacked stay near ``maxBytes`` whatever the messages weigh. No I/O: the partition's ingestion stage sets the
/// count it returns; the tests drive it directly.
///
/// RabbitMQ has no prefetch in bytes (it refuses a non-zero `prefetch-size`), so the count follows the bodies'
/// average size: `maxBytes / average`, within `minMessages...maxMessages` (a batch heavier than the average counts
/// at once). It starts where the contract's largest
/// body (64 KiB, ``assumedLargest``) keeps the bound, and grows once small bodies are seen. Bodies over the contract's
/// size are not kept in memory (see `AMQPMessageHandler.maxBodyBytes`: each goes to a file until it is parked), but
/// they weigh their full size all the same: what the budget bounds is the bytes in flight wherever they wait, and so
/// the files (and their descriptors) a partition holds.
struct PrefetchBudget {
    /// The most bytes of message bodies the partition should hold.
    let maxBytes: Int
    /// The configured prefetch count: never more.
    let maxMessages: Int
    /// Never fewer, so that small batches still flow.
    let minMessages: Int
    /// The prefetch count in force.
    private(set) var current: Int
    /// The running average body size (an exponentially weighted mean of the batches' averages).
    private(set) var averageSize: Double

    /// The body size assumed before any is seen: the contract's largest.
    static let assumedLargest = 65_536

    init(maxBytes: Int, maxMessages: Int, minMessages: Int = 8) {
        self.maxBytes = maxBytes
        self.maxMessages = max(1, maxMessages)
        self.minMessages = min(max(1, minMessages), self.maxMessages)
        self.averageSize = Double(Self.assumedLargest)
        self.current = 0
        self.current = target(size: averageSize)
    }

    /// The count that keeps bodies of `size` within ``maxBytes``.
    private func target(size: Double) -> Int {
        let count = Double(maxBytes) / max(size, 1)
        return Int(min(Double(maxMessages), max(Double(minMessages), count.rounded(.down))))
    }

    /// A batch of `count` messages weighing `bytes` was taken. Returns the new prefetch count when it should
    /// change: at once when it must shrink, and only for a change of a quarter or more when it may grow (a
    /// `basic.qos` per batch would be churn).
    mutating func took(count: Int, bytes: Int) -> Int? {
        guard count > 0 else { return nil }
        let batchAverage = Double(bytes) / Double(count)
        averageSize = averageSize * 0.7 + batchAverage * 0.3
        // Heavier bodies shrink the count at once (the latest batch decides); lighter ones grow it with the average.
        let wanted = target(size: max(averageSize, batchAverage))
        guard wanted < current || wanted >= current + max(1, current / 4) else { return nil }
        current = wanted
        return wanted
    }
}
