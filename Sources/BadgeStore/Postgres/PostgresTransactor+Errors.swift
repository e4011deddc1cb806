import NIOCore
import PostgresNIO

extension PostgresTransactor {
    static func storeError(_ error: any Error) -> StoreError {
        if let error = error as? StoreError { return error }
        // postgres-nio's `PreparedQuery` (see `PostgresExecutor`) reports errors in their older shapes: a server's
        // error, a closed connection, an unclean shutdown as a protocol error, or NIO's own error of a lost
        // connection.
        if let error = error as? PostgresError {
            switch error {
            case .server(let server):
                return serverError(
                    state: server.fields[.sqlState] ?? "", message: server.fields[.message] ?? "server error")
            case .connectionClosed:
                return StoreError(code: .connection, message: "the connection closed", transient: true)
            case .protocol(let message):
                let lost = message.contains("connection close")
                return StoreError(code: lost ? .connection : .postgres, message: message, transient: lost)
            }
        }
        if error is IOError || error is ChannelError {
            return StoreError(code: .connection, message: "\(error)", transient: true)
        }
        if let error = error as? PSQLError {
            switch error.code {
            case .server:
                return serverError(
                    state: error.serverInfo?[.sqlState] ?? "", message: error.serverInfo?[.message] ?? "server error")
            case .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown:
                let underlying = error.underlying.map { ": \($0)" } ?? ""
                return StoreError(code: .connection, message: "\(error.code)\(underlying)", transient: true)
            case .poolClosed:
                return StoreError.closed
            default:
                return StoreError(code: .postgres, message: "\(error.code)", transient: false)
            }
        }
        let text = String(describing: error)
        if text.contains("connectionCreationCircuitBreakerTripped") {
            return StoreError(code: .connection, message: "cannot connect to PostgreSQL", transient: true)
        }
        if text.contains("poolShutdown") { return StoreError.closed }
        return StoreError(code: .postgres, message: text, transient: false)
    }

    private static func serverError(state: String, message: String) -> StoreError {
        let code: StoreError.Code
        switch state {
        case "40001": code = .serializationFailure
        case "40P01": code = .deadlock
        default: code = state.isEmpty ? .server : .sqlState(state)
        }
        return StoreError(code: code, message: message, failure: DatabaseFailure.classify(sqlState: state))
    }
}
