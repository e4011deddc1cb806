import BadgeSupport
import NIOCore
import Synchronization

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
