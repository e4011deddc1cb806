import BadgeSink
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging

/// A sink for one test, its routes served in process by HummingbirdTesting's router mode (no socket), and a
/// client for it. Tests where the socket is the point (TLS, HTTP/2, streams) use `TestSink.withSink` instead.
struct RouterSink: SinkRequests {
    let state: SinkState
    private let client: any TestClientProtocol

    /// Runs `body` against a new sink made with `configuration` and a fault table seeded with `seed`.
    static func withSink<Result: Sendable>(
        seed: UInt64 = 20_240_601,
        configuration: SinkConfiguration = SinkConfiguration(),
        _ body: @Sendable (RouterSink) async throws -> Result
    ) async throws -> Result {
        var logger = Logger(label: "badgesink-tests")
        logger.logLevel = .warning
        let state = SinkState(configuration: configuration, randomSeed: seed)
        let server = try SinkServer(configuration: configuration, state: state, logger: logger)
        let application = Application(router: server.makeRouter(), logger: logger)
        return try await application.test(.router) { client in
            try await body(RouterSink(state: state, client: client))
        }
    }

    func send(
        _ method: String,
        _ path: String,
        body: [UInt8]? = nil,
        headers: [(String, String)] = []
    ) async throws -> SinkAnswer {
        var fields = HTTPFields()
        for (name, value) in headers {
            guard let name = HTTPFields.Element.Name(name) else {
                throw SinkAnswer.Failure(description: "bad header \(name)")
            }
            fields.append(HTTPFields.Element(name: name, value: value))
        }
        let response = try await self.client.executeRequest(
            uri: path,
            method: HTTPRequest.Method(method) ?? .get,
            headers: fields,
            body: body.map { ByteBuffer(bytes: $0) }
        )
        var answerHeaders: [String: String] = [:]
        for field in response.headers {
            answerHeaders[field.name.canonicalName] = field.value
        }
        return SinkAnswer(
            status: Int(response.status.code),
            headers: answerHeaders,
            body: Array(response.body.readableBytesView)
        )
    }
}
