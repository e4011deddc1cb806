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
    var status: UInt16
    var provider: PushProvider
    var bodyIsJSON: Bool
    var httpVersion: HTTPVersion

    /// The HTTP version a push came over.
    enum HTTPVersion: UInt8, Sendable {
        case http1
        case http2

        /// As `GET /deliveries` shows it: `"1.1"` or `"2"`.
        var text: String { self == .http2 ? "2" : "1.1" }
    }
}
