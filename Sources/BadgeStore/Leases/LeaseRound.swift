/// What one lease round decided.
public struct LeaseRound: Sendable, Equatable {
    /// The leases this worker holds now (renewed or newly acquired), by partition.
    public var leases: [PartitionLease]
    /// Workers seen alive in the last lease interval, this one included.
    public var liveWorkers: Int
    /// How many partitions each worker should hold: ceil(partitions / live workers).
    public var target: Int

    public init(leases: [PartitionLease], liveWorkers: Int, target: Int) {
        self.leases = leases
        self.liveWorkers = liveWorkers
        self.target = target
    }
}
