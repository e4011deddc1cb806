/// One app the sink plays: the APNs keys and topics, and the FCM projects and service accounts, that are its.
///
/// An APNs push signed with one of ``apnsKeyIDs`` is the app's, and must carry one of its ``apnsTopics`` (400
/// `TopicDisallowed` otherwise, as Apple answers a key pushing to another team's app); an FCM push to one of its
/// ``fcmProjects`` must carry an access token issued to one of its ``fcmServiceAccounts`` (403
/// `PERMISSION_DENIED` otherwise). Empty sets check nothing. An app may bring its own keys (``apnsKeys``,
/// ``fcmAccountKeys``), as `badgepipe sink --apps-file` derives them from the worker's apps file.
public struct SinkApp: Sendable, Equatable {
    /// The public half of one of an app's APNs keys, and the team its tokens must name.
    public struct APNsKey: Sendable, Equatable {
        /// The key id (the token's `kid`).
        public var keyID: String
        /// The team id (the token's `iss`).
        public var teamID: String
        /// The public key in PEM (`-----BEGIN PUBLIC KEY-----`).
        public var publicKeyPEM: String

        /// Creates a key.
        public init(keyID: String, teamID: String, publicKeyPEM: String) {
            self.keyID = keyID
            self.teamID = teamID
            self.publicKeyPEM = publicKeyPEM
        }
    }

    /// The app's name, recorded as `app` in a delivery's `headers.authorization`.
    public var name: String
    /// Its APNs key ids.
    public var apnsKeyIDs: Set<String>
    /// Its APNs topics (bundle ids).
    public var apnsTopics: Set<String>
    /// Its Firebase projects.
    public var fcmProjects: Set<String>
    /// The service accounts (`client_email`) that may send to its projects.
    public var fcmServiceAccounts: Set<String>
    /// Its APNs keys: APNs pushes need a valid provider token (as with ``SinkConfiguration/apnsKeyFiles``), and
    /// each key's id counts as one of ``apnsKeyIDs``.
    public var apnsKeys: [APNsKey] = []
    /// Its service accounts' public keys in PEM, by `client_email`: `POST /token` issues access tokens for
    /// assertions each signed (FCM pushes then need one), and each account counts as one of ``fcmServiceAccounts``.
    public var fcmAccountKeys: [String: String] = [:]

    /// Creates an app.
    public init(
        name: String, apnsKeyIDs: Set<String> = [], apnsTopics: Set<String> = [], fcmProjects: Set<String> = [],
        fcmServiceAccounts: Set<String> = []
    ) {
        self.name = name
        self.apnsKeyIDs = apnsKeyIDs
        self.apnsTopics = apnsTopics
        self.fcmProjects = fcmProjects
        self.fcmServiceAccounts = fcmServiceAccounts
    }
}

/// Settings of the mock delivery sink (`badgepipe sink`).
public struct SinkConfiguration: Sendable, Equatable {
    /// The address to bind, `127.0.0.1` by default.
    public var host: String
    /// The TCP port to bind, 8787 by default. Port 0 binds an ephemeral port; the port actually bound is
    /// reported through ``SinkServer``'s `onRunning` callback.
    public var port: Int
    /// When set, every recorded push prints one summary line to standard output.
    public var logDeliveries: Bool
    /// With a certificate and its key (PEM files), the sink serves HTTPS and offers HTTP/2 and HTTP/1.1 by ALPN,
    /// as APNs does; without, plain HTTP/1.1.
    public var tlsCertificateFile: String?
    /// The private key of ``tlsCertificateFile``.
    public var tlsKeyFile: String?
    /// With TLS: require a client certificate issued by (or equal to) one in this PEM file, as APNs does for
    /// certificate auth; nil asks for none.
    public var tlsClientCAFile: String?
    /// APNs provider-token keys by key id: the PEM file of each key's public half. When any is set, APNs pushes
    /// need a valid bearer token (403 `MissingProviderToken` / `InvalidProviderToken` / `ExpiredProviderToken`
    /// otherwise); when none is, tokens are not checked.
    public var apnsKeyFiles: [String: String]
    /// The team id APNs tokens must name as `iss`; nil accepts any issuer.
    public var apnsTeamID: String?
    /// The team of each key id, where it is not ``apnsTeamID`` (a sink standing in for several Apple teams).
    public var apnsKeyTeams: [String: String] = [:]
    /// The apps the sink plays (a deployment's `--apps-file`): which app a push was for is recorded with its
    /// credential, and a push sent with another app's credential is refused as Apple and Google refuse it.
    public var apps: [SinkApp] = []
    /// The PEM public key of the FCM service account. When set, `POST /token` issues access tokens for assertions
    /// it signed, whatever their `iss`, and FCM pushes need one (401 otherwise); when nil and no app brings
    /// ``SinkApp/fcmAccountKeys``, FCM pushes are not checked.
    public var fcmPublicKeyFile: String?
    /// Seconds an access token from `POST /token` is valid.
    public var fcmTokenLifetime: Int
    /// The most deliveries kept; the oldest are dropped beyond it (counted in `/stats` as `dropped`).
    public var maxDeliveries: Int
    /// The most bytes of deliveries kept (headers and bodies as stored, plus a fixed-size record each); the oldest
    /// are dropped beyond it, as beyond ``maxDeliveries``. ``defaultMaxDeliveryBytes`` by default.
    public var maxDeliveryBytes: Int
    /// The largest request body read, on every route; a bigger one is answered 413 and not recorded.
    /// ``defaultMaxRequestBytes`` by default.
    public var maxRequestBytes: Int
    /// The most requests waiting at once (`?wait=`); more are answered 503 `too_many_waiters`.
    /// ``defaultMaxWaiters`` by default.
    public var maxWaiters: Int
    /// The most `GET /events` streams (the web view's live feed) open at once, counted apart from
    /// ``maxWaiters``; more are answered 503 `too_many_streams`. ``defaultMaxEventStreams`` by default.
    public var maxEventStreams: Int
    /// Names besides loopback and ``host`` that requests to the inspection API and the web view may carry in
    /// `Host` (and their pages in `Origin`): a name this sink is reached by, such as a reverse proxy's. See
    /// `LocalWebGuard`.
    public var allowedHosts: [String] = []
    /// The longest a request waits, in seconds: a longer `?wait=` (up to 300) is cut to it. ``defaultMaxWaitSeconds`` by default; a
    /// fuzzer's sink sets less, so that no request hangs.
    public var maxWaitSeconds: Double

    /// 1 GiB: a million deliveries of a typical 600-byte push and its headers fit.
    public static let defaultMaxDeliveryBytes = 1 << 30
    /// 64 KiB: sixteen times the largest APNs payload, so a too-large push is still recorded and answered 413
    /// `PayloadTooLarge` as APNs does.
    public static let defaultMaxRequestBytes = 64 * 1024
    /// 1024 waiting requests.
    public static let defaultMaxWaiters = 1024
    /// 256 open event streams: a developer's browser tabs, many times over.
    public static let defaultMaxEventStreams = 256
    /// The address a sink binds unless told otherwise: loopback.
    public static let defaultHost = "127.0.0.1"
    /// The port a sink binds unless told otherwise.
    public static let defaultPort = 8787
    /// An hour, as Google's access tokens live.
    public static let defaultFCMTokenLifetime = 3600
    /// A million deliveries.
    public static let defaultMaxDeliveries = 1_000_000
    /// Five minutes, the longest `?wait=` a request may ask for.
    public static let defaultMaxWaitSeconds: Double = 300

    /// Creates a configuration.
    /// - Parameters:
    ///   - host: The address to bind.
    ///   - port: The TCP port to bind; 0 for an ephemeral port.
    ///   - logDeliveries: Whether to print one line per recorded push to standard output.
    public init(
        host: String = SinkConfiguration.defaultHost, port: Int = SinkConfiguration.defaultPort,
        logDeliveries: Bool = false, tlsCertificateFile: String? = nil,
        tlsKeyFile: String? = nil, tlsClientCAFile: String? = nil, apnsKeyFiles: [String: String] = [:],
        apnsTeamID: String? = nil,
        fcmPublicKeyFile: String? = nil, fcmTokenLifetime: Int = SinkConfiguration.defaultFCMTokenLifetime,
        maxDeliveries: Int = SinkConfiguration.defaultMaxDeliveries,
        maxDeliveryBytes: Int = SinkConfiguration.defaultMaxDeliveryBytes,
        maxRequestBytes: Int = SinkConfiguration.defaultMaxRequestBytes,
        maxWaiters: Int = SinkConfiguration.defaultMaxWaiters,
        maxEventStreams: Int = SinkConfiguration.defaultMaxEventStreams,
        maxWaitSeconds: Double = SinkConfiguration.defaultMaxWaitSeconds
    ) {
        self.host = host
        self.port = port
        self.logDeliveries = logDeliveries
        self.tlsCertificateFile = tlsCertificateFile
        self.tlsKeyFile = tlsKeyFile
        self.tlsClientCAFile = tlsClientCAFile
        self.apnsKeyFiles = apnsKeyFiles
        self.apnsTeamID = apnsTeamID
        self.fcmPublicKeyFile = fcmPublicKeyFile
        self.fcmTokenLifetime = fcmTokenLifetime
        self.maxDeliveries = maxDeliveries
        self.maxDeliveryBytes = maxDeliveryBytes
        self.maxRequestBytes = maxRequestBytes
        self.maxWaiters = maxWaiters
        self.maxEventStreams = maxEventStreams
        self.maxWaitSeconds = maxWaitSeconds
    }
}
