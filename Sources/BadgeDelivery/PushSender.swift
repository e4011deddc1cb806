import AsyncHTTPClient
import BadgeCore
import Logging
import Metrics
import NIOCore
import NIOHTTP1

/// Sends pushes to APNs and FCM v1 (or a sink standing in for them) over HTTP, one attempt per call.
///
/// `send` never sleeps and never retries a provider's answer: it returns the classified outcome of one attempt
/// (``DeliveryOutcome``), and the caller schedules any retry (the worker keeps each push's next attempt in its
/// outbox, so a slow or failing provider holds up nobody else). Concurrency is the caller's.
public struct PushSender: Sendable {
    private let configuration: DeliveryConfiguration
    private let client: HTTPClient
    private let logger: Logger
    private let sent = Counter(label: "badgepipe_pushes_sent_total")
    private let failedAttempts = Counter(label: "badgepipe_push_attempts_failed_total")
    private let vetoed = Counter(label: "badgepipe_push_attempts_vetoed_total")

    /// Creates a sender on a shared HTTP client (the caller owns and shuts down the client).
    public init(configuration: DeliveryConfiguration, client: HTTPClient, logger: Logger) {
        self.configuration = configuration
        self.client = client
        self.logger = logger
    }

    /// Makes one attempt to send `push`; throws only `CancellationError`, or what `fence.prepare()` throws.
    ///
    /// With a `fence`, the attempt is prepared by it and checked at the last moment before the body is written
    /// (see ``SendFence``); an attempt it vetoes is tried again at once, starting with `prepare()`.
    public func send(_ push: PushRequest, fence: (any SendFence)? = nil) async throws -> DeliveryOutcome {
        while true {
            try Task.checkCancellation()
            try await fence?.prepare()
            let body = fence.map { FencedBody(bytes: push.body, fence: $0) }
            let response: ProviderResponse
            do {
                response = try await sendOnce(push, body: body)
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                if let body, body.wasVetoed {
                    vetoed.increment()
                    logger.debug("push attempt vetoed by its fence", metadata: ["push.token": "\(push.token)"])
                    continue
                }
                failedAttempts.increment()
                if let refusal = Self.refusal(error) {
                    // The request cannot be built: the same push would be refused every time.
                    return .rejected(status: 0, reason: refusal)
                }
                return .retry(reason: "\(error)", retryAfter: nil)
            }
            switch response {
            case .accepted:
                sent.increment()
                return .accepted
            case .deadToken(let reason):
                return .deadToken(status: 410, reason: reason)
            case .rejected(let reason):
                return .rejected(status: 400, reason: reason)
            case .configurationError(let reason):
                failedAttempts.increment()
                return .configurationError(status: 403, reason: reason)
            case .retry(let reason, let retryAfterSeconds):
                failedAttempts.increment()
                let retryAfter = retryAfterSeconds.flatMap { $0 > 0 ? Duration.seconds($0) : nil }
                return .retry(reason: reason, retryAfter: retryAfter.map { min($0, configuration.maxRetryAfter) })
            }
        }
    }

    /// The reason when the HTTP client refused to build the request (a header value or URL it does not accept);
    /// nil for errors of the exchange itself (connection, timeout), which a later attempt may not meet.
    static func refusal(_ error: any Error) -> String? {
        guard let error = error as? HTTPClientError else { return nil }
        if error == .invalidURL || error == .emptyHost || error == .emptyScheme || error == .missingSocketPath {
            return "the HTTP client refused the request: \(error)"
        }
        // Errors with an associated value are compared by name.
        let text = String(describing: error)
        let refusals = [
            "invalidHeaderFieldNames", "invalidHeaderFieldValues", "unsupportedScheme", "bodyLengthMismatch",
        ]
        guard refusals.contains(where: { text.contains($0) }) else { return nil }
        return "the HTTP client refused the request: \(text)"
    }

    private func sendOnce(_ push: PushRequest, body: FencedBody?) async throws -> ProviderResponse {
        let base = push.provider == .apns ? configuration.apnsBaseURL : configuration.fcmBaseURL
        var request = HTTPClientRequest(url: base + push.path)
        request.method = .POST
        for (name, value) in push.headers { request.headers.add(name: name, value: value) }
        if request.headers["content-type"].isEmpty {
            request.headers.add(name: "content-type", value: "application/json")
        }
        if let body {
            request.body = .stream(body, length: .known(Int64(push.body.count)))
        } else {
            request.body = .bytes(ByteBuffer(bytes: push.body))
        }
        let timeout = TimeAmount.nanoseconds(
            configuration.requestTimeout.components.seconds * 1_000_000_000
                + configuration.requestTimeout.components.attoseconds / 1_000_000_000)
        let response = try await client.execute(request, timeout: timeout)
        let body = try await response.body.collect(upTo: 64 * 1024)
        return ProviderResponse.classify(
            provider: push.provider, status: Int(response.status.code), body: Array(buffer: body),
            retryAfter: response.headers.first(name: "retry-after"))
    }
}
