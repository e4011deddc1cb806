import PostgresNIO

extension PostgresTransactor {
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
                return StoreError(code: code, message: message, failure: DatabaseFailure.classify(sqlState: state))
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
