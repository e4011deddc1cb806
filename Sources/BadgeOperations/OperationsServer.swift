import Hummingbird
import Logging
import Prometheus
import ServiceLifecycle

/// The operations listener of a worker: `GET /metrics` (Prometheus text format from `registry`), `GET /healthz`
/// and `GET /readyz` (200 or 503 with a one-line JSON reason each), on `host` (127.0.0.1 unless told otherwise)
/// and `port`. A `Service`: it serves until graceful shutdown.
public struct OperationsServer: Service {
    /// A health answer: whether all is well, and what is wrong when not.
    public struct Check: Sendable {
        public var ok: Bool
        public var reasons: [String]

        public init(ok: Bool, reasons: [String]) {
            self.ok = ok
            self.reasons = reasons
        }
    }

    private let host: String
    private let port: Int
    private let registry: PrometheusCollectorRegistry
    private let live: @Sendable () -> Check
    private let ready: @Sendable () -> Check
    private let logger: Logger
    private let onRunning: (@Sendable (Int) async -> Void)?

    /// Creates the listener.
    public init(
        host: String, port: Int, registry: PrometheusCollectorRegistry, live: @escaping @Sendable () -> Check,
        ready: @escaping @Sendable () -> Check, logger: Logger, onRunning: (@Sendable (Int) async -> Void)? = nil
    ) {
        self.host = host
        self.port = port
        self.registry = registry
        self.live = live
        self.ready = ready
        self.logger = logger
        self.onRunning = onRunning
    }

    public func run() async throws {
        let router = Router()
        let (registry, live, ready) = (registry, live, ready)
        router.get("/metrics") { _, _ -> Response in
            Self.metrics(registry)
        }
        router.get("/healthz") { _, _ in Self.answer(live()) }
        router.get("/readyz") { _, _ in Self.answer(ready()) }
        let (logger, onRunning, host, port) = (logger, onRunning, host, port)
        let app = Application(
            router: router,
            configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: nil),
            onServerRunning: { channel in
                let bound = channel.localAddress?.port ?? port
                logger.info("operations listener", metadata: ["ops.host": "\(host)", "ops.port": "\(bound)"])
                await onRunning?(bound)
            },
            logger: logger)
        try await app.run()
    }

    /// `registry` in the Prometheus text format.
    public static func metrics(_ registry: PrometheusCollectorRegistry) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
        return Response(
            status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer())))
    }

    /// The JSON body of `/healthz` and `/readyz`: `{"status":"ok"|"unavailable","reasons":[…]}`.
    struct Answer: ResponseEncodable {
        var status: String
        var reasons: [String]
    }

    private static func answer(_ check: Check) -> EditedResponse<Answer> {
        EditedResponse(
            status: check.ok ? .ok : .serviceUnavailable,
            response: Answer(status: check.ok ? "ok" : "unavailable", reasons: check.reasons))
    }
}
