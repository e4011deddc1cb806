import Logging
import PostgresNIO

extension PostgresExecutor {
    /// Runs `write` (a query, a preparation or a prepared statement's execution) and awaits its result; fails at
    /// once, transiently, when the connection has already closed.
    ///
    /// postgres-nio 1.33 hands a query to its channel with a write whose promise is `nil`. Once the channel has
    /// closed (the server was stopped, say), its handlers are gone and such a write fails silently: the query
    /// never completes and its caller waits forever, cancellation or not. That is what wedged workers after a
    /// PostgreSQL restart: the pool can lease a connection that has just closed, and a transaction's next statement
    /// or ROLLBACK can follow a close. Checking the channel and writing in one event-loop task leaves no gap: an
    /// open channel still has its handler, which answers or fails the query.
    static func ifOpen<Result: Sendable>(
        _ connection: PostgresConnection, _ write: @escaping @Sendable () -> EventLoopFuture<Result>
    ) async throws -> Result {
        @Sendable func checkAndWrite() -> EventLoopFuture<Result> {
            if connection.isClosed {
                return connection.eventLoop.makeFailedFuture(
                    StoreError(code: .connectionClosed, message: "the connection has closed", transient: true))
            }
            return write()
        }
        // On the loop already (a transaction runs there, see `EventLoopTaskExecutor`): this is one step of it.
        if connection.eventLoop.inEventLoop { return try await checkAndWrite().get() }
        return try await connection.eventLoop.flatSubmit(checkAndWrite).get()
    }
}
