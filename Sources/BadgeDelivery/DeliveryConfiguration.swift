/// Where pushes go and how hard to try.
public struct DeliveryConfiguration: Sendable {
    /// Base URL of the APNs endpoint (`https://api.push.apple.com`, or a local `badgepipe sink`).
    public var apnsBaseURL: String
    /// Base URL of the FCM v1 endpoint (`https://fcm.googleapis.com`, or a local `badgepipe sink`).
    public var fcmBaseURL: String
    /// First retry delay after a 429, a 5xx or a network error.
    public var initialBackoff: Duration
    /// Largest retry delay (a `Retry-After` from the provider may ask for more; up to `maxRetryAfter` is honoured).
    public var maxBackoff: Duration
    /// Cap on a provider's `Retry-After`.
    public var maxRetryAfter: Duration
    /// Per-request timeout.
    public var requestTimeout: Duration

    /// Creates a configuration; the defaults send to a local sink.
    public init(
        apnsBaseURL: String = "http://127.0.0.1:8787",
        fcmBaseURL: String = "http://127.0.0.1:8787",
        initialBackoff: Duration = .milliseconds(50),
        maxBackoff: Duration = .seconds(5),
        maxRetryAfter: Duration = .seconds(60),
        requestTimeout: Duration = .seconds(10)
    ) {
        self.apnsBaseURL = apnsBaseURL
        self.fcmBaseURL = fcmBaseURL
        self.initialBackoff = initialBackoff
        self.maxBackoff = maxBackoff
        self.maxRetryAfter = maxRetryAfter
        self.requestTimeout = requestTimeout
    }
}
