import BadgeSink

/// The settings table of `badgepipe sink [serve]`, as ``WorkerSettings`` is the worker's: each setting's flag,
/// environment variable, default, bounds and help written once. The repeatable ones (`--allowed-host`,
/// `--apns-key-id`, whose variables hold a comma-separated list), the switch `--log-deliveries` and the fractional
/// `--max-wait` are read where they are declared, with their defaults from `SinkConfiguration`.
enum SinkSettings {
    /// `--host`.
    static let host = TextSetting(
        flag: "host", variable: "BADGEPIPE_SINK_HOST", defaultValue: SinkConfiguration.defaultHost,
        summary: "Address to bind")
    /// `--port`.
    static let port = IntegerSetting(
        flag: "port", variable: "BADGEPIPE_SINK_PORT", defaultValue: SinkConfiguration.defaultPort, range: 0...65535,
        summary: "Port")
    /// `--tls-cert`.
    static let tlsCert = TextSetting(
        flag: "tls-cert", variable: "BADGEPIPE_SINK_TLS_CERT", defaultValue: nil,
        summary: "TLS certificate, PEM: serve HTTPS with HTTP/2 and HTTP/1.1")
    /// `--tls-key`.
    static let tlsKey = TextSetting(
        flag: "tls-key", variable: "BADGEPIPE_SINK_TLS_KEY", defaultValue: nil,
        summary: "The TLS certificate's private key, PEM")
    /// `--tls-client-ca`.
    static let tlsClientCA = TextSetting(
        flag: "tls-client-ca", variable: "BADGEPIPE_SINK_TLS_CLIENT_CA", defaultValue: nil,
        summary: "Require client certificates vouched for by this PEM file")
    /// `--apns-team-id`.
    static let apnsTeamID = TextSetting(
        flag: "apns-team-id", variable: "BADGEPIPE_SINK_APNS_TEAM_ID", defaultValue: nil, defaultText: "any",
        summary: "The team id APNs tokens must carry as iss")
    /// `--fcm-public-key`.
    static let fcmPublicKey = TextSetting(
        flag: "fcm-public-key", variable: "BADGEPIPE_SINK_FCM_PUBLIC_KEY", defaultValue: nil,
        summary: "FCM service account's public key, PEM",
        discussion: "POST /token then issues access tokens for its assertions, and FCM sends need one.")
    /// `--apps-file`.
    static let appsFile = TextSetting(
        flag: "apps-file", variable: "BADGEPIPE_SINK_APPS_FILE", defaultValue: nil,
        summary: "The worker's apps file, YAML: play every app it declares",
        discussion: """
            APNs tokens are checked per key id and team with the public half of each app's .p8 key, and must carry \
            one of the app's topics (400 TopicDisallowed otherwise); POST /token issues access tokens to each app's \
            service account (its key from the service-account file), and an FCM send to an app's project with \
            another app's account is 403 PERMISSION_DENIED. Adds to --apns-key-id and --fcm-public-key.
            """)
    /// `--fcm-token-lifetime`.
    static let fcmTokenLifetime = IntegerSetting(
        flag: "fcm-token-lifetime", variable: "BADGEPIPE_SINK_FCM_TOKEN_LIFETIME",
        defaultValue: SinkConfiguration.defaultFCMTokenLifetime, range: 1...86_400,
        summary: "Seconds a /token access token lives")
    /// `--max-deliveries`.
    static let maxDeliveries = IntegerSetting(
        flag: "max-deliveries", variable: "BADGEPIPE_SINK_MAX_DELIVERIES",
        defaultValue: SinkConfiguration.defaultMaxDeliveries, range: 1...100_000_000,
        summary: "Deliveries kept, the oldest dropped beyond")
    /// `--max-delivery-bytes`.
    static let maxDeliveryBytes = IntegerSetting(
        flag: "max-delivery-bytes", variable: "BADGEPIPE_SINK_MAX_DELIVERY_BYTES",
        defaultValue: SinkConfiguration.defaultMaxDeliveryBytes, range: 4096...(1 << 40),
        summary: "Bytes of deliveries kept, the oldest dropped beyond",
        defaultText: "\(SinkConfiguration.defaultMaxDeliveryBytes >> 30) GiB")
    /// `--max-request-bytes`.
    static let maxRequestBytes = IntegerSetting(
        flag: "max-request-bytes", variable: "BADGEPIPE_SINK_MAX_REQUEST_BYTES",
        defaultValue: SinkConfiguration.defaultMaxRequestBytes, range: 4096...(64 << 20),
        summary: "Largest request body read")
    /// `--max-waiters`.
    static let maxWaiters = IntegerSetting(
        flag: "max-waiters", variable: "BADGEPIPE_SINK_MAX_WAITERS", defaultValue: SinkConfiguration.defaultMaxWaiters,
        range: 1...100_000, summary: "Requests waiting at once with ?wait=")
    /// `--max-event-streams`.
    static let maxEventStreams = IntegerSetting(
        flag: "max-event-streams", variable: "BADGEPIPE_SINK_MAX_EVENT_STREAMS",
        defaultValue: SinkConfiguration.defaultMaxEventStreams, range: 1...100_000,
        summary: "GET /events streams open at once, apart from the waits")
    /// `--event-loops`. One event loop: the pushes are answered on it, and one thread woken for many connections
    /// costs less CPU a push than one per core (the figures are in `docs/performance.md`).
    static let eventLoops = IntegerSetting(
        flag: "event-loops", variable: "BADGEPIPE_SINK_EVENT_LOOPS", defaultValue: 1, range: 1...64,
        summary: "Event-loop threads, where pushes are answered")
}
