/// A worker's hold on one partition queue: while it holds the lease (and only then) it may consume the queue and
/// commit batches from it. `epoch` grows with every change of owner and fences out a worker that lost the lease
/// (for example one frozen past the lease's expiry) from committing anything more.
public struct PartitionLease: Sendable, Hashable {
    /// The partition number.
    public var partition: Int
    /// The owner's fencing token.
    public var epoch: Int64
    /// The owner.
    public var worker: String

    public init(partition: Int, epoch: Int64, worker: String) {
        self.partition = partition
        self.epoch = epoch
        self.worker = worker
    }
}
