import BadgeWire

/// One recorded push in compact form: plain integers only, its bytes in the ``ByteArena``.
struct ReceivedPushRecord: Sendable {
    var seq: Int64
    var receivedAtMilliseconds: Int64
    var location: ByteArena.Location
    var headersLength: UInt32
    var bodyLength: UInt32
    /// Index into the interned tokens.
    var token: UInt32
    /// Index into the interned reasons; 0 for none.
    var reason: UInt32
    /// Index into the interned authorization records; 0 for none.
    var authorization: UInt32
    /// The delay a fault added before the answer, in milliseconds; 0 for none.
    var delayMilliseconds: UInt32
    /// The HTTP status answered; 0 when a connection fault broke the connection instead.
    var status: UInt16
    var provider: PushProvider
    var bodyIsJSON: Bool
    var httpVersion: HTTPVersion
    var environment: Environment

    /// The APNs environment a push was sent to, by its path; `none` for FCM.
    enum Environment: UInt8, Sendable {
        case none
        case production
        case sandbox

        /// As `GET /devices` shows it.
        var name: String? {
            switch self {
            case .none: nil
            case .production: "production"
            case .sandbox: "sandbox"
            }
        }
    }

    /// The HTTP version a push came over.
    enum HTTPVersion: UInt8, Sendable {
        case http1
        case http2

        /// As `GET /deliveries` shows it: `"1.1"` or `"2"`.
        var text: String { self == .http2 ? "2" : "1.1" }
    }
}
