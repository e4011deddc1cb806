import AsyncHTTPClient
import BadgeCore
import BadgeSupport
import BadgeWire
import Foundation
import Logging
import Metrics
import NIOCore
import NIOHTTP1
import Synchronization

/// Sends pushes to APNs and FCM v1 (or a sink standing in for them) over HTTP, one attempt per call.
///
/// `send` never sleeps and never retries a provider's answer: it returns the classified outcome of one attempt
/// (``PushOutcome``), and the caller schedules any retry (the worker keeps each push's next attempt in its
/// outbox, so a slow or failing provider holds up nobody else). Concurrency is the caller's.
public struct PushSender: Sendable {
    private let configuration: DeliveryConfiguration
    private let clients: ProviderClients
    /// Which app serves each push.
    public let registry: AppRegistry
    /// The provider-token signer of each APNs key account: one schedule per team's key (renewed every 50 minutes,
    /// never more often than every 20, see `APNsTokenSchedule`).
    private let apnsAuthenticators: [ProviderAccount: APNsAuthenticator]
    /// The access tokens of each FCM service account.
    private let fcmTokens: [ProviderAccount: FCMAccessTokens]
    private let logger: Logger
    private let sent = Counter(label: "badgepipe_pushes_sent_total")
    private let failedAttempts = Counter(label: "badgepipe_push_attempts_failed_total")
    private let vetoed = Counter(label: "badgepipe_push_attempts_vetoed_total")
    /// Pushes a provider found too large: impossible by construction (bodies are fitted to 4 KB), so counted apart.
    private let payloadTooLarge = Counter(label: "badgepipe_pushes_payload_too_large_total")
    private let credentialRenewals = Counter(label: "badgepipe_provider_credential_renewals_total")
    /// Answers that say our credentials or configuration are wrong (the pushes are kept): what makes a worker
    /// unhealthy.
    private let configurationErrors = Counter(label: "badgepipe_provider_configuration_errors_total")

    /// Which providers refuse our configuration now (read by the worker's `/readyz`).
    public let health: ProviderHealth

    /// Creates a sender on `clients` (the caller owns and shuts them down), with the credentials of
    /// `configuration`.
    public init(
        configuration: DeliveryConfiguration, clients: ProviderClients, health: ProviderHealth = ProviderHealth(),
        logger: Logger
    ) {
        self.configuration = configuration
        self.clients = clients
        self.health = health
        self.logger = logger
        registry = configuration.registry
        var authenticators: [ProviderAccount: APNsAuthenticator] = [:]
        var tokens: [ProviderAccount: FCMAccessTokens] = [:]
        for app in configuration.effectiveApps {
            if case .token(let key) = app.apns?.credentials, let account = app.account(.apns),
                authenticators[account] == nil
            {
                authenticators[account] = APNsAuthenticator(key: key)
            }
            if let serviceAccount = app.fcm?.credentials, let account = app.account(.fcm), tokens[account] == nil,
                let client = clients.pools[account]?.first
            {
                tokens[account] = FCMAccessTokens(
                    account: serviceAccount, client: client, timeout: TimeAmount(configuration.requestTimeout))
            }
        }
        apnsAuthenticators = authenticators
        fcmTokens = tokens
    }

    /// Whether the deployment names its apps (`--apps-file`): only then do reports name a push's app.
    public var servesApps: Bool { !configuration.apps.isEmpty }

    /// The app `push` goes with (``AppRegistry/resolve(app:provider:topic:)``), or why it is not sent: its provider
    /// or its app is not configured.
    public func app(for push: PlannedPush) -> Result<AppConfiguration, AppRegistry.Unserved> {
        guard configuration.providers.contains(push.provider) else {
            return .failure(AppRegistry.Unserved(message: Self.notConfiguredReason(push.provider)))
        }
        return registry.resolve(app: push.app, provider: push.provider, topic: push.topic)
    }

    /// Makes one attempt to send `push`; throws only `CancellationError`.
    ///
    /// With a `window`, the push goes out only while it is open: it is read before the attempt and again at the
    /// last moment, when a connection is ready for the body; closed at either point, nothing reaches the provider
    /// and the answer is ``PushOutcome/windowClosed`` (the caller may open it again and send again). A credential
    /// the provider calls expired (APNs `ExpiredProviderToken`, FCM 401) is renewed once and the push sent again
    /// at once; refused again, it is a configuration error. A push to a provider the configuration does not deliver
    /// to is not sent: ``PushOutcome/notConfigured(reason:)``.
    public func send(_ push: PushRequest, window: SendWindow? = nil) async throws -> PushOutcome {
        let appName = push.app ?? registry.defaultApp ?? AppConfiguration.defaultName
        guard configuration.providers.contains(push.provider),
            let account = clients.accounts[appName]?[push.provider], let pool = clients.pools[account], !pool.isEmpty
        else {
            return .notConfigured(
                reason: configuration.providers.contains(push.provider)
                    ? "app \(appName) has no \(push.provider.displayName) configuration"
                    : Self.notConfiguredReason(push.provider))
        }
        // Over `http://` (a local sink, a stand-in), the lean HTTP/1.1 client; over `https://`, async-http-client.
        let plain = clients.plain[account]?[baseURL(for: push)]
        var renewed = false
        while true {
            try Task.checkCancellation()
            if let window, !window.isOpen { return .windowClosed }
            let credential: String?
            do {
                credential = try await self.credential(for: account)
            } catch let error as CredentialError {
                failedAttempts.increment()
                if !error.retryable {
                    configurationErrors.increment()
                    health.configurationError(push.provider, reason: error.message)
                }
                return error.retryable
                    ? .retry(reason: error.message, retryAfter: nil)
                    : .configurationError(status: 0, reason: error.message)
            }
            let body = plain == nil ? window.map { WindowedBody(bytes: push.body, window: $0) } : nil
            let response: ProviderResponse
            do {
                if let plain {
                    response = try await sendOnce(push, plain: plain, window: window, credential: credential)
                } else {
                    response = try await sendOnce(push, body: body, credential: credential, pool: pool)
                }
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                if body?.wasVetoed == true || (error as? HTTP1PushError)?.code == .vetoed {
                    vetoed.increment()
                    logger.debug(
                        "push attempt vetoed: its send window closed",
                        metadata: ["push.token": "\(push.token.prefix(8))"])
                    return .windowClosed
                }
                failedAttempts.increment()
                DeliveryMetrics.attempts(push.provider, status: nil).increment()
                if let refusal = Self.refusal(error) {
                    // The request cannot be built: the same push would be refused every time.
                    return .rejected(status: 0, reason: refusal)
                }
                return .retry(reason: "\(error)", retryAfter: nil)
            }
            switch response {
            case .accepted:
                sent.increment()
                health.accepted(push.provider)
                return .accepted
            case .deadToken(let reason, let timestamp):
                return .deadToken(status: 410, reason: reason, timestampMilliseconds: timestamp)
            case .rejected(let reason):
                return .rejected(status: 400, reason: reason)
            case .payloadTooLarge(let reason):
                payloadTooLarge.increment()
                return .rejected(status: 413, reason: reason)
            case .credentialExpired(let reason):
                failedAttempts.increment()
                if !renewed, let credential, try await renew(account, refused: credential) {
                    renewed = true
                    continue
                }
                configurationErrors.increment()
                health.configurationError(push.provider, reason: reason)
                return .configurationError(status: push.provider == .apns ? 403 : 401, reason: reason)
            case .configurationError(let reason):
                failedAttempts.increment()
                configurationErrors.increment()
                health.configurationError(push.provider, reason: reason)
                return .configurationError(status: 403, reason: reason)
            case .retry(let reason, let retryAfterSeconds):
                failedAttempts.increment()
                let retryAfter = retryAfterSeconds.flatMap { $0 > 0 ? Duration.seconds($0) : nil }
                return .retry(reason: reason, retryAfter: retryAfter.map { min($0, configuration.maxRetryAfter) })
            }
        }
    }

    /// The bearer token for `account`'s next request, or nil when it is sent without one.
    private func credential(for account: ProviderAccount) async throws -> String? {
        switch account.provider {
        case .apns:
            guard let apnsAuthenticator = apnsAuthenticators[account] else { return nil }
            do {
                return try apnsAuthenticator.token()
            } catch {
                throw CredentialError(
                    code: .signingFailed, message: "cannot sign an APNs provider token: \(error)", retryable: false)
            }
        case .fcm:
            return try await fcmTokens[account]?.token()
        }
    }

    /// Renews a credential the provider called expired; returns whether the push should be sent again now.
    private func renew(_ account: ProviderAccount, refused: String) async throws -> Bool {
        let provider = account.provider
        switch provider {
        case .apns:
            guard let apnsAuthenticator = apnsAuthenticators[account],
                (try? apnsAuthenticator.renew(afterExpired: refused)) != nil
            else {
                return false
            }
        case .fcm:
            guard let tokens = fcmTokens[account] else { return false }
            await tokens.invalidate(refused)
        }
        credentialRenewals.increment()
        logger.warning(
            "the provider called our credential expired; renewed it and sending again",
            metadata: ["push.provider": "\(provider.rawValue)", "push.account": "\(account.id)"])
        return true
    }

    /// Why a push to `provider` is not sent, in a sentence.
    static func notConfiguredReason(_ provider: PushProvider) -> String {
        switch provider {
        case .apns: "this deployment has no APNs configuration (--apns-key-file, --apns-cert-file or --apns-url)"
        case .fcm: "this deployment has no FCM configuration (--fcm-credentials-file or --fcm-url)"
        }
    }

    /// The base URL a push goes to: APNs by the device's environment, or FCM.
    func baseURL(for push: PushRequest) -> String {
        switch push.provider {
        case .apns: push.environment == .sandbox ? configuration.apnsSandboxBaseURL : configuration.apnsBaseURL
        case .fcm: configuration.fcmBaseURL
        }
    }

    /// The reason when the HTTP client refused to build the request (a header value or URL it does not accept);
    /// nil for errors of the exchange itself (connection, timeout), which a later attempt may not meet.
    static func refusal(_ error: any Error) -> String? {
        if let error = error as? HTTP1PushError {
            return error.code == .invalidRequest ? "the HTTP client refused the request: \(error.message)" : nil
        }
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

    /// The headers `push` goes with: its own, then `content-type`, `authorization` and `apns-expiration` unless it
    /// has them (`authorization` replaces its own).
    private func headers(_ push: PushRequest, credential: String?) -> [(String, String)] {
        var headers = push.headers
        headers.reserveCapacity(headers.count + 3)
        var hasContentType = false
        var hasExpiration = false
        for (name, _) in push.headers {
            if name == "content-type" { hasContentType = true }
            if name == "apns-expiration" { hasExpiration = true }
        }
        if !hasContentType { headers.append(("content-type", "application/json")) }
        if let credential {
            headers.removeAll { $0.0 == "authorization" }
            headers.append(("authorization", "bearer \(credential)"))
        }
        if push.provider == .apns, !hasExpiration {
            // APNs keeps trying an offline device for as long as a push may wait in the outbox (a newer badge-only
            // push replaces an older one through its collapse id).
            let seconds = configuration.maxPushAge.components.seconds
            headers.append(("apns-expiration", String(Int64(Date().timeIntervalSince1970) + max(seconds, 1))))
        }
        return headers
    }

    /// One attempt over plain HTTP/1.1 (``HTTP1PushClient``); the window is read right before the write.
    private func sendOnce(
        _ push: PushRequest, plain: HTTP1PushClient, window: SendWindow?, credential: String?
    ) async throws -> ProviderResponse {
        let request = try plain.request(
            path: push.path, headers: headers(push, credential: credential), body: push.body, window: window)
        let response = try await plain.execute(request, timeout: TimeAmount(configuration.requestTimeout))
        DeliveryMetrics.attempts(push.provider, status: response.status).increment()
        return ProviderResponse.classify(
            provider: push.provider, status: response.status, body: response.body, retryAfter: response.retryAfter)
    }

    /// One attempt with async-http-client; a windowed `body` reads its window when the client pulls the body.
    private func sendOnce(
        _ push: PushRequest, body: WindowedBody?, credential: String?, pool: [HTTPClient]
    ) async throws
        -> ProviderResponse
    {
        var request = HTTPClientRequest(url: baseURL(for: push) + push.path)
        request.method = .POST
        for (name, value) in headers(push, credential: credential) { request.headers.add(name: name, value: value) }
        if let body {
            request.body = .stream(body, length: .known(Int64(push.body.count)))
        } else {
            request.body = .bytes(ByteBuffer(bytes: push.body))
        }
        // A device's pushes share one client (one HTTP/2 connection per host): spread over devices, not requests.
        let client = pool[pool.count == 1 ? 0 : Int(UInt(bitPattern: push.token.hashValue) % UInt(pool.count))]
        let response = try await client.execute(request, timeout: TimeAmount(configuration.requestTimeout))
        DeliveryMetrics.attempts(push.provider, status: Int(response.status.code)).increment()
        let body = try await response.body.collect(upTo: 64 * 1024)
        return ProviderResponse.classify(
            provider: push.provider, status: Int(response.status.code), body: Array(buffer: body),
            retryAfter: response.headers.first(name: "retry-after"))
    }
}

/// A request body of one buffer that is handed over only while its ``SendWindow`` is open, checked when the HTTP
/// client pulls it, which happens only once a connection has sent the request head: the latest point before the
/// body reaches the socket. Remembers a veto so the sender can tell it from a network error.
final class WindowedBody: AsyncSequence, Sendable {
    typealias Element = ByteBuffer

    /// The window closed before the body was handed over.
    struct Closed: Error {}

    private let bytes: [UInt8]
    private let window: SendWindow
    private let vetoed = Mutex(false)

    init(bytes: [UInt8], window: SendWindow) {
        self.bytes = bytes
        self.window = window
    }

    /// Whether the window was closed when the body was pulled (the attempt was aborted before the body was written).
    var wasVetoed: Bool { vetoed.withLock { $0 } }

    func makeAsyncIterator() -> Iterator { Iterator(body: self) }

    /// Yields the body once, if the window is open.
    struct Iterator: AsyncIteratorProtocol {
        let body: WindowedBody
        var done = false

        mutating func next() async throws -> ByteBuffer? {
            if done { return nil }
            done = true
            guard body.window.isOpen else {
                body.vetoed.withLock { $0 = true }
                throw Closed()
            }
            return ByteBuffer(bytes: body.bytes)
        }
    }
}

/// The sender's metrics (see the worker's `WorkerMetrics` for the rest). Label values are bounded.
enum DeliveryMetrics {
    /// Requests that got an answer or failed without one, by provider and status class (`2xx`, `4xx`, `5xx`,
    /// `other`; `none`: no answer, a network error or timeout).
    static func attempts(_ provider: PushProvider, status: Int?) -> Counter {
        let index = statusClasses.firstIndex(of: statusClass(status)) ?? 0
        return provider == .apns ? apnsAttempts[index] : fcmAttempts[index]
    }

    private static let statusClasses = ["2xx", "4xx", "5xx", "other", "none"]
    private static let apnsAttempts = statusClasses.map { counter(.apns, $0) }
    private static let fcmAttempts = statusClasses.map { counter(.fcm, $0) }

    private static func counter(_ provider: PushProvider, _ statusClass: String) -> Counter {
        Counter(
            label: "badgepipe_push_attempts_total",
            dimensions: [("provider", provider.rawValue), ("status_class", statusClass)])
    }

    static func statusClass(_ status: Int?) -> String {
        switch status {
        case nil: "none"
        case .some(200..<300): "2xx"
        case .some(400..<500): "4xx"
        case .some(500..<600): "5xx"
        default: "other"
        }
    }
}
