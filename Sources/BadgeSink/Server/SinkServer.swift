import BadgeOperations
import Hummingbird
import HummingbirdCore
import HummingbirdHTTP2
import Logging
import NIOSSL
import Prometheus
import ServiceLifecycle

/// The mock delivery sink: an HTTP server that answers APNs and FCM pushes like the real services, records them in
/// a ``SinkState``, and serves the inspection API (`/deliveries`, `/faults`, `/stats`) and, for FCM tests, an
/// OAuth2 token endpoint (`/token`).
///
/// Plain HTTP/1.1 by default; with a TLS certificate and key it serves HTTPS and offers HTTP/2 and HTTP/1.1 by
/// ALPN, as APNs does. With APNs keys or an FCM public key configured it checks credentials as the real services
/// do (see ``SinkConfiguration``).
///
/// A `Service`: ``run()`` serves until graceful shutdown, so it can be placed in a `ServiceGroup` that handles
/// SIGTERM and SIGINT.
public struct SinkServer: Service {
    /// The address, port and options.
    public let configuration: SinkConfiguration
    /// The store the server records into.
    public let state: SinkState
    let credentials: SinkCredentials
    private let tls: TLSConfiguration?
    private let logger: Logger
    private let onRunning: (@Sendable (Int) async -> Void)?
    /// Served at `GET /metrics` when set (the registry the process bootstrapped swift-metrics with).
    private let metrics: PrometheusCollectorRegistry?

    /// Creates a server; throws when a key or certificate file of `configuration` cannot be read or used.
    /// - Parameters:
    ///   - configuration: The address, port and options.
    ///   - state: The store to record into; a new empty one (keeping `configuration.maxDeliveries`) by default.
    ///   - logger: The server's logger.
    ///   - onRunning: Called once the server listens, with the port actually bound (useful with port 0).
    public init(
        configuration: SinkConfiguration,
        state: SinkState? = nil,
        logger: Logger,
        metrics: PrometheusCollectorRegistry? = nil,
        onRunning: (@Sendable (Int) async -> Void)? = nil
    ) throws {
        self.metrics = metrics
        self.configuration = configuration
        self.state = state ?? SinkState(configuration: configuration)
        self.credentials = try SinkCredentials(configuration: configuration)
        self.tls = try Self.tlsConfiguration(configuration)
        self.logger = logger
        self.onRunning = onRunning
    }

    /// Serves until graceful shutdown (or cancellation).
    public func run() async throws {
        try await self.makeApplication().run()
    }

    /// The router: the push endpoints, the inspection API, the token endpoint and, with a registry, `/metrics`.
    /// Tests serve it in process (HummingbirdTesting's `.router` mode) without a socket.
    public func makeRouter() -> Router<SinkRequestContext> {
        let router = Router(context: SinkRequestContext.self)
        router.add(middleware: LocalWebGuard(host: configuration.host, allowedHosts: configuration.allowedHosts))
        if let metrics {
            router.add(middleware: MetricsMiddleware())
            let state = self.state
            router.get("/metrics") { _, _ -> Response in
                // Brings badgepipe_sink_kept_bytes up to date.
                _ = state.stats()
                return OperationsServer.metrics(metrics)
            }
        }
        self.addRoutes(to: router)
        self.addEventRoutes(to: router)
        SinkAssets.addRoutes(to: router)
        return router
    }

    /// The application ``run()`` serves: ``makeRouter()`` on the configured address, over TLS with HTTP/2 and
    /// HTTP/1.1 by ALPN when a certificate is configured, else plain HTTP/1.1.
    public func makeApplication() throws -> Application<RouterResponder<SinkRequestContext>> {
        let router = self.makeRouter()
        let configuredPort = self.configuration.port
        let onRunning = self.onRunning
        let logger = self.logger
        let host = self.configuration.host
        let secure = self.tls != nil
        // The push endpoints are answered in the pipeline (see HTTP1PushFastPath and PushFastPath); the rest goes to
        // the router.
        let answerer = FastPushAnswerer(
            state: self.state, credentials: self.credentials, logDeliveries: self.configuration.logDeliveries)
        let maxBody = self.configuration.maxRequestBytes
        let server: HTTPServerBuilder
        if let tls = self.tls {
            let channel = HTTP1Channel.Configuration(
                additionalChannelHandlers: [PushFastPath(answerer: answerer, maxBody: maxBody)])
            server = try .http2Upgrade(tlsConfiguration: tls, configuration: .init(streamConfiguration: channel))
        } else {
            server = HTTPServerBuilder { responder in
                SinkHTTP1Channel(http1: HTTP1Channel(responder: responder), answerer: answerer, maxBody: maxBody)
            }
        }
        let app = Application(
            router: router,
            server: server,
            configuration: ApplicationConfiguration(
                address: .hostname(host, port: configuredPort),
                serverName: nil
            ),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? configuredPort
                logger.info(
                    "sink listening", metadata: ["host": "\(host)", "port": "\(port)", "tls": "\(secure)"])
                await onRunning?(port)
            },
            logger: logger
        )
        return app
    }

    private static func tlsConfiguration(_ configuration: SinkConfiguration) throws -> TLSConfiguration? {
        switch (configuration.tlsCertificateFile, configuration.tlsKeyFile) {
        case (nil, nil):
            if configuration.tlsClientCAFile != nil {
                throw SinkError.configuration("--tls-client-ca needs --tls-cert and --tls-key")
            }
            return nil
        case (let certificate?, let key?):
            do {
                var tls = TLSConfiguration.makeServerConfiguration(
                    certificateChain: try NIOSSLCertificate.fromPEMFile(certificate).map { .certificate($0) },
                    privateKey: .privateKey(try NIOSSLPrivateKey(file: key, format: .pem)))
                tls.applicationProtocols = ["h2", "http/1.1"]
                if let clientCA = configuration.tlsClientCAFile {
                    // Certificate auth: the handshake fails without a client certificate this file vouches for.
                    tls.trustRoots = .file(clientCA)
                    tls.certificateVerification = .noHostnameVerification
                }
                return tls
            } catch {
                throw SinkError.configuration("cannot load the TLS certificate \(certificate) and key \(key): \(error)")
            }
        default:
            throw SinkError.configuration("--tls-cert and --tls-key go together")
        }
    }
}
