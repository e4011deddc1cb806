import AsyncHTTPClient
import BadgeCore
import Logging
import Metrics
import NIOCore
import NIOHTTP1

/// Sends pushes to APNs and FCM v1 (or a sink standing in for them) over HTTP.
///
/// `send` does not give up on throttling (429), server errors (5xx) or network errors: it retries with exponential
/// backoff and full jitter, honouring `Retry-After`, until the provider answers for good or the task is cancelled,
/// so a push is never lost to a transient failure. Concurrency is the caller's: each call is one request at a time.
public struct PushSender: Sendable {
    private let configuration: DeliveryConfiguration
    private let client: HTTPClient
    private let logger: Logger
    private let sent = Counter(label: "badgepipe_pushes_sent_total")
    private let retried = Counter(label: "badgepipe_push_retries_total")
    private let vetoed = Counter(label: "badgepipe_push_attempts_vetoed_total")

    /// Creates a sender on a shared HTTP client (the caller owns and shuts down the client).
    public init(configuration: DeliveryConfiguration, client: HTTPClient, logger: Logger) {
        self.configuration = configuration
        self.client = client
        self.logger = logger
    }

    /// Sends one push, retrying transient failures; throws only `CancellationError`, or what `fence.prepare()`
    /// throws.
    ///
    /// With a `fence`, each attempt is prepared by it and checked at the last moment before the body is written
    /// (see ``SendFence``); an attempt it vetoes is tried again at once, starting with `prepare()`.
    public func send(_ push: PushRequest, fence: (any SendFence)? = nil) async throws -> DeliveryOutcome {
        var attempt = 0
        while true {
            try Task.checkCancellation()
            try await fence?.prepare()
            let body = fence.map { FencedBody(bytes: push.body, fence: $0) }
            attempt += 1
            let response: ProviderResponse
            do {
                response = try await sendOnce(push, body: body)
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                if let body, body.wasVetoed {
                    vetoed.increment()
                    logger.debug("push attempt vetoed by its fence", metadata: ["push.token": "\(push.token)"])
                    attempt -= 1
                    continue
                }
                response = .retry(reason: "\(error)", retryAfterSeconds: nil)
            }
            switch response {
            case .accepted:
                sent.increment()
                return .accepted
            case .deadToken(let reason):
                return .deadToken(status: 410, reason: reason)
            case .rejected(let reason):
                logger.warning(
                    "push rejected", metadata: ["push.token": "\(push.token)", "push.reason": "\(reason)"])
                return .rejected(status: 400, reason: reason)
            case .retry(let reason, let retryAfterSeconds):
                retried.increment()
                let delay = backoff(attempt: attempt, retryAfterSeconds: retryAfterSeconds)
                logger.debug(
                    "push retry",
                    metadata: [
                        "push.token": "\(push.token)", "push.reason": "\(reason)", "push.attempt": "\(attempt)",
                        "push.retry_in_ms":
                            "\(delay.components.seconds * 1000 + delay.components.attoseconds / 1_000_000_000_000_000)",
                    ])
                try await Task.sleep(for: delay)
            }
        }
    }

    /// Exponential backoff with full jitter, or the provider's `Retry-After` (capped) when it gave one.
    func backoff(attempt: Int, retryAfterSeconds: Int?) -> Duration {
        if let retryAfterSeconds, retryAfterSeconds > 0 {
            return min(.seconds(retryAfterSeconds), configuration.maxRetryAfter)
        }
        let exponent = min(attempt - 1, 20)
        let ceiling = min(configuration.initialBackoff * (1 << exponent), configuration.maxBackoff)
        let fraction = Double.random(in: 0.5...1)
        return ceiling * fraction
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
