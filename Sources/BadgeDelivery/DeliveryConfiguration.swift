/// Where pushes go and how hard to try.
public struct DeliveryConfiguration: Sendable {
    /// Base URL of the APNs endpoint (`https://api.push.apple.com`, or a local `badgepipe sink`).
    public var apnsBaseURL: String
    /// Base URL of the FCM v1 endpoint (`https://fcm.googleapis.com`, or a local `badgepipe sink`).
    public var fcmBaseURL: String
    /// The ceiling of the first retry delay after a 429, a 5xx, a timeout or a network error; it doubles with each
    /// further attempt (delays are drawn with full jitter below the ceiling).
    public var initialBackoff: Duration
    /// The largest ceiling of a retry delay (a `Retry-After` from the provider may ask for more; up to
    /// `maxRetryAfter` is honoured).
    public var maxBackoff: Duration
    /// How long a push may keep failing before it is given up (counted and logged).
    public var maxPushAge: Duration
    /// Cap on a provider's `Retry-After`.
    public var maxRetryAfter: Duration
    /// Per-request timeout.
    public var requestTimeout: Duration

    /// Creates a configuration; the defaults send to a local sink.
    public init(
        apnsBaseURL: String = "http://127.0.0.1:8787",
        fcmBaseURL: String = "http://127.0.0.1:8787",
        initialBackoff: Duration = .milliseconds(250),
        maxBackoff: Duration = .seconds(30),
        maxPushAge: Duration = .seconds(24 * 3600),
        maxRetryAfter: Duration = .seconds(60),
        requestTimeout: Duration = .seconds(10)
    ) {
        self.apnsBaseURL = apnsBaseURL
        self.fcmBaseURL = fcmBaseURL
        self.initialBackoff = initialBackoff
        self.maxBackoff = maxBackoff
        self.maxPushAge = maxPushAge
        self.maxRetryAfter = maxRetryAfter
        self.requestTimeout = requestTimeout
    }
}
