import BadgeSupport
import Foundation
import NIOSSL
import PostgresNIO

/// A parsed `postgres://` URL.
///
/// TLS follows libpq's `sslmode`: `disable`; `allow` and `prefer` (TLS when the server offers it, no certificate
/// check); `require` (TLS, no certificate check); `verify-ca` (the server's certificate must chain to a trusted root);
/// `verify-full` (and name the host). Trusted roots are the system's, or the PEM file `sslrootcert`. The default is
/// `verify-full` for a database on another host and `prefer` on a loopback address, where the traffic never leaves
/// the machine.
struct PostgresURL {
    var configuration: PostgresClient.Configuration
    var schema: String?
    /// The effective `sslmode`.
    var sslMode: String
    /// Whether the batch pool prepares its statements (`prepared_statements=on|off`, on by default; see
    /// `PostgresStatementCache`).
    var preparedStatements = true

    static let sslModes = ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"]

    static func isLoopback(_ host: String) -> Bool {
        LoopbackHost.isLoopback(host) || host.hasPrefix("/")
    }

    init(_ url: String) throws {
        guard let components = URLComponents(string: url),
            let scheme = components.scheme?.lowercased(), scheme == "postgres" || scheme == "postgresql"
        else { throw StoreError.badURL("not a postgres:// URL") }
        guard let host = components.host, !host.isEmpty else { throw StoreError.badURL("the URL has no host") }
        guard let user = components.user, !user.isEmpty else { throw StoreError.badURL("the URL has no user") }
        let database = String(components.path.drop(while: { $0 == "/" }))
        var sslMode: String?
        var rootCertificate: String?
        var schema: String?
        var maximumConnections: Int?
        var idleInTransactionMilliseconds = 2000
        var statementTimeoutMilliseconds = 9000
        var preparedStatements = true
        for item in components.queryItems ?? [] {
            switch (item.name, item.value ?? "") {
            case ("sslmode", let mode):
                guard Self.sslModes.contains(mode) else {
                    throw StoreError.badURL(
                        "unsupported sslmode \(mode) (one of \(Self.sslModes.joined(separator: ", ")))")
                }
                sslMode = mode
            case ("sslrootcert", let path):
                guard FileManager.default.isReadableFile(atPath: path) else {
                    throw StoreError.badURL("sslrootcert \(path) is not a readable file")
                }
                rootCertificate = path
            case ("schema", let value) where !value.isEmpty: schema = value
            case ("max_connections", let value):
                guard let number = Int(value), number > 0 else {
                    throw StoreError.badURL("max_connections must be a positive integer")
                }
                maximumConnections = number
            case ("idle_in_transaction_timeout_ms", let value):
                guard let number = Int(value), number >= 0 else {
                    throw StoreError.badURL("idle_in_transaction_timeout_ms must be a non-negative integer")
                }
                idleInTransactionMilliseconds = number
            case ("statement_timeout_ms", let value):
                guard let number = Int(value), number >= 0 else {
                    throw StoreError.badURL("statement_timeout_ms must be a non-negative integer")
                }
                statementTimeoutMilliseconds = number
            case ("prepared_statements", let value):
                switch value {
                case "on": preparedStatements = true
                case "off": preparedStatements = false
                default: throw StoreError.badURL("prepared_statements must be on or off")
                }
            default: throw StoreError.badURL("unsupported URL parameter \(item.name)")
            }
        }
        // The default: verify-full for a database on another host, prefer on this one (loopback).
        // (sslrootcert given alone: verify-full against it.)
        let mode = sslMode ?? (Self.isLoopback(host) && rootCertificate == nil ? "prefer" : "verify-full")
        if rootCertificate != nil, mode != "verify-ca", mode != "verify-full" {
            throw StoreError.badURL("sslrootcert needs sslmode=verify-ca or verify-full")
        }
        self.sslMode = mode
        self.preparedStatements = preparedStatements
        var tlsConfiguration = TLSConfiguration.makeClientConfiguration()
        switch mode {
        case "verify-full": tlsConfiguration.certificateVerification = .fullVerification
        case "verify-ca": tlsConfiguration.certificateVerification = .noHostnameVerification
        default: tlsConfiguration.certificateVerification = .none
        }
        if let rootCertificate { tlsConfiguration.trustRoots = .file(rootCertificate) }
        let tls: PostgresClient.Configuration.TLS =
            switch mode {
            case "disable": .disable
            case "allow", "prefer": .prefer(tlsConfiguration)
            default: .require(tlsConfiguration)
            }
        var configuration = PostgresClient.Configuration(
            host: host, port: components.port ?? 5432, username: user, password: components.password,
            database: database.isEmpty ? nil : database, tls: tls)
        if let maximumConnections { configuration.options.maximumConnections = maximumConnections }
        configuration.options.additionalStartupParameters.append(
            ("idle_in_transaction_session_timeout", String(idleInTransactionMilliseconds)))
        configuration.options.additionalStartupParameters.append(
            ("statement_timeout", String(statementTimeoutMilliseconds)))
        self.configuration = configuration
        self.schema = schema
    }
}
