import PostgresNIO

extension PostgresTransactor {
    /// SQLSTATE codes after which a retry may succeed.
    static func isTransient(sqlState: String) -> Bool {
        sqlState.hasPrefix("08")  // connection exception
            || ["40001", "40P01"].contains(sqlState)  // serialization failure, deadlock
            || ["57P01", "57P02", "57P03"].contains(sqlState)  // shutdown, crash shutdown, cannot connect now
            || ["53300", "55P03", "25P03"].contains(sqlState)  // too many connections, lock timeout, idle timeout
            || sqlState == "57014"  // statement timeout (or cancelled by an operator)
    }

    static func storeError(_ error: any Error) -> StoreError {
        if let error = error as? StoreError { return error }
        if let error = error as? PSQLError {
            switch error.code {
            case .server:
                let state = error.serverInfo?[.sqlState] ?? ""
                let message = error.serverInfo?[.message] ?? "server error"
                let code: StoreError.Code
                switch state {
                case "40001": code = .serializationFailure
                case "40P01": code = .deadlock
                default: code = state.isEmpty ? .server : .sqlState(state)
                }
                return StoreError(code: code, message: message, transient: isTransient(sqlState: state))
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
}
