import BadgeStore

/// A partition a worker session is consuming: its lease term (fleet mode), the buffer its consumer fills (finishing
/// it stops the partition after its batch in progress) and the doorbell of its delivery loop.
struct RunningPartition {
    var term: LeaseTerm?
    var buffer: MessageBuffer
    var doorbell: Doorbell
}
