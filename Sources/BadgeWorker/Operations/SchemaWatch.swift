import BadgeStore
import Logging
import ServiceLifecycle

/// Stops a running worker when a newer badgepipe moves the database's schema past what this code serves (see
/// `Schema`: a migration that is not additive). Every ``interval`` it reads the schema's requirement; when the
/// database no longer serves this code it logs why, once, and ends, which stops the worker's `ServiceGroup`: the
/// worker writes nothing more, and what it had not acked goes back to its queues in order. Failures to read are
/// left to the next look (a database outage is the other loops' business).
public struct SchemaWatch: Service {
    /// How often it looks, by default.
    public static let defaultInterval: Duration = .seconds(30)

    let store: any PipelineStore
    let interval: Duration
    let logger: Logger

    public init(store: any PipelineStore, interval: Duration = SchemaWatch.defaultInterval, logger: Logger) {
        self.store = store
        self.interval = interval
        self.logger = logger
    }

    public func run() async throws {
        while !Task.isShuttingDownGracefully, !Task.isCancelled {
            try? await cancelWhenGracefulShutdown { [interval] in try await Task.sleep(for: interval) }
            guard !Task.isShuttingDownGracefully, !Task.isCancelled else { return }
            do {
                try await store.checkSchema()
            } catch let error as StoreError where error.code == .schemaTooNew {
                logger.critical(
                    "the database schema moved past this badgepipe; stopping so that it writes nothing more",
                    metadata: ["worker.error": "\(error)"])
                throw error
            } catch {
                logger.debug("schema check failed; trying again later", metadata: ["worker.error": "\(error)"])
            }
        }
    }
}
