/// One recorded push in compact form: plain integers only, its bytes in the ``ByteArena``.
struct StoredDelivery: Sendable {
    var seq: Int64
    var receivedAtMilliseconds: Int64
    var location: ByteArena.Location
    var headersLength: UInt32
    var bodyLength: UInt32
    /// Index into the interned tokens.
    var token: UInt32
    /// Index into the interned reasons; 0 for none.
    var reason: UInt32
    var status: UInt16
    var provider: PushProvider
    var bodyIsJSON: Bool
}
