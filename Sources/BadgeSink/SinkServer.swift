import Hummingbird
import Logging
import ServiceLifecycle

/// The mock delivery sink: an HTTP/1.1 server that answers APNs and FCM pushes like the real services, records
/// them in a ``SinkState``, and serves the inspection API (`/deliveries`, `/faults`, `/stats`).
///
/// A `Service`: ``run()`` serves until graceful shutdown, so it can be placed in a `ServiceGroup` that handles
/// SIGTERM and SIGINT.
public struct SinkServer: Service {
    /// The address, port and options.
    public let configuration: SinkConfiguration
    /// The store the server records into.
    public let state: SinkState
    private let logger: Logger
    private let onRunning: (@Sendable (Int) async -> Void)?

    /// Creates a server.
    /// - Parameters:
    ///   - configuration: The address, port and options.
    ///   - state: The store to record into; a new empty one by default.
    ///   - logger: The server's logger.
    ///   - onRunning: Called once the server listens, with the port actually bound (useful with port 0).
    public init(
        configuration: SinkConfiguration,
        state: SinkState = .init(),
        logger: Logger,
        onRunning: (@Sendable (Int) async -> Void)? = nil
    ) {
        self.configuration = configuration
        self.state = state
        self.logger = logger
        self.onRunning = onRunning
    }

    /// Serves until graceful shutdown (or cancellation).
    public func run() async throws {
        let router = Router(context: BasicRequestContext.self)
        self.addRoutes(to: router)
        let configuredPort = self.configuration.port
        let onRunning = self.onRunning
        let logger = self.logger
        let host = self.configuration.host
        let app = Application(
            router: router,
            configuration: ApplicationConfiguration(
                address: .hostname(host, port: configuredPort),
                serverName: nil
            ),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? configuredPort
                logger.info("sink listening", metadata: ["host": "\(host)", "port": "\(port)"])
                await onRunning?(port)
            },
            logger: logger
        )
        try await app.run()
    }
}
