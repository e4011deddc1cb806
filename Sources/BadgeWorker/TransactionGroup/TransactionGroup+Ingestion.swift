import BadgeCore
import BadgeStore
import Logging

/// A worker's ingestion transactions, shared by its partitions' ingestion stages.
extension TransactionGroup where Request == ApplyBatch, Answer == [AppliedEvent] {
    /// Batches applied to `store`, several in one transaction (``BadgeStore/apply(_:policy:)``) up to `maxWeight`
    /// (``PartitionIngestion/weight(of:)`` summed), at most one transaction every `interval` unless batches are
    /// full; transient failures retried in place, except that a transaction of several events that ran out of time
    /// (``StoreError/ranOutOfTime``) fails with `batch_too_long`: its partitions apply their events again in
    /// smaller transactions (``PartitionIngestion``), since the same work may run out of time again and again on
    /// a starved machine until the watchdog ends the worker.
    static func ingestion(
        store: any BadgeStore, policy: BadgePolicy, maxWeight: Int, interval: Duration, health: WorkerHealth?,
        logger: Logger
    ) -> TransactionGroup {
        TransactionGroup("ingestion", maxWeight: maxWeight, interval: interval, logger: logger) { batches in
            let events = batches.reduce(0) { $0 + $1.events.count }
            // The attempt's own time limit (`Retry.attemptTimeout`) counts as running out of time too.
            return try await Retry.transient(
                "apply", health: health, logger: logger,
                refining: { error in
                    guard error.ranOutOfTime && events > 1 else { return error }
                    return StoreError(
                        code: .batchTooLong, message: "\(events) events in one transaction: \(error)", failure: .other)
                }
            ) {
                try await store.apply(batches, policy: policy)
            }
        }
    }
}
