import ArgumentParser
import BadgeSink
import Logging
import ServiceLifecycle

/// `badgepipe sink`.
struct SinkCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sink", abstract: "Run the mock APNs / FCM sink that records every push.")

    @Option(help: "Address to bind (BADGEPIPE_SINK_HOST, default 127.0.0.1).") var host: String?
    @Option(help: "Port (BADGEPIPE_SINK_PORT, default 8787).") var port: Int?
    @Flag(help: "Print one line per push received (BADGEPIPE_SINK_LOG_DELIVERIES=1).") var logDeliveries = false
    @Option(help: "trace, debug, info, warning, error (BADGEPIPE_LOG_LEVEL).") var logLevel: String?

    func run() async throws {
        let logger = Settings.logger("badgepipe.sink", level: logLevel)
        let configuration = SinkConfiguration(
            host: Settings.value(host, "BADGEPIPE_SINK_HOST", default: "127.0.0.1"),
            port: port ?? Int(Settings.value(nil, "BADGEPIPE_SINK_PORT", default: "8787")) ?? 8787,
            logDeliveries: logDeliveries || Settings.value(nil, "BADGEPIPE_SINK_LOG_DELIVERIES", default: "0") == "1")
        let server = SinkServer(configuration: configuration, logger: logger) { port in
            logger.info("sink listening", metadata: ["sink.port": "\(port)"])
        }
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [ServiceGroupConfiguration.ServiceConfiguration(service: server)],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger))
        try await group.run()
    }
}
