import Logging
import PostgresNIO

extension PostgresExecutor {
    /// Runs `query` and collects its rows; fails at once, transiently, when the connection has already closed.
    ///
    /// postgres-nio 1.33 hands a query to its channel with a write whose promise is `nil`. Once the channel has
    /// closed (the server was stopped, say), its handlers are gone and such a write fails silently: the query
    /// never completes and its caller waits forever, cancellation or not. That can wedge a worker after a
    /// PostgreSQL restart: the pool can lease a connection that has just closed, and a transaction's next statement
    /// or ROLLBACK can follow a close. Checking the channel and writing in one event-loop task leaves no gap: an
    /// open channel still has its handler, which answers or fails the query.
    static func queryIfOpen(
        _ query: PostgresQuery, on connection: PostgresConnection, logger: Logger
    ) async throws -> PostgresQueryResult {
        @Sendable func checkAndWrite() -> EventLoopFuture<PostgresQueryResult> {
            if connection.isClosed {
                return connection.eventLoop.makeFailedFuture(
                    StoreError(code: .connectionClosed, message: "the connection has closed", transient: true))
            }
            return connection.query(query, logger: logger)
        }
        // On the loop already (a transaction runs there, see `EventLoopTaskExecutor`): this is one step of it.
        if connection.eventLoop.inEventLoop { return try await checkAndWrite().get() }
        return try await connection.eventLoop.flatSubmit(checkAndWrite).get()
    }
}
