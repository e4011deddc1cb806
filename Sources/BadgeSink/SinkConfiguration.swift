/// Settings of the mock delivery sink (`badgepipe sink`).
public struct SinkConfiguration: Sendable, Equatable {
    /// The address to bind, `127.0.0.1` by default.
    public var host: String
    /// The TCP port to bind, 8787 by default. Port 0 binds an ephemeral port; the port actually bound is
    /// reported through ``SinkServer``'s `onRunning` callback.
    public var port: Int
    /// When set, every recorded push prints one summary line to standard output.
    public var logDeliveries: Bool

    /// Creates a configuration.
    /// - Parameters:
    ///   - host: The address to bind.
    ///   - port: The TCP port to bind; 0 for an ephemeral port.
    ///   - logDeliveries: Whether to print one line per recorded push to standard output.
    public init(host: String = "127.0.0.1", port: Int = 8787, logDeliveries: Bool = false) {
        self.host = host
        self.port = port
        self.logDeliveries = logDeliveries
    }
}
