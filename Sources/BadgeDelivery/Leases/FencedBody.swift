import NIOCore
import Synchronization

/// A request body of one buffer that asks its fence for permission when the HTTP client pulls it, which happens
/// only once a connection has sent the request head: the latest point before the body reaches the socket.
/// Remembers a veto so the sender can tell it from a network error.
final class FencedBody: AsyncSequence, Sendable {
    typealias Element = ByteBuffer

    private let bytes: [UInt8]
    private let fence: any SendFence
    private let vetoed = Mutex(false)

    init(bytes: [UInt8], fence: any SendFence) {
        self.bytes = bytes
        self.fence = fence
    }

    /// Whether the fence vetoed the body (the attempt was aborted before the body was written).
    var wasVetoed: Bool { vetoed.withLock { $0 } }

    func makeAsyncIterator() -> Iterator { Iterator(body: self) }

    /// Yields the body once, if the fence allows it.
    struct Iterator: AsyncIteratorProtocol {
        let body: FencedBody
        var done = false

        mutating func next() async throws -> ByteBuffer? {
            if done { return nil }
            done = true
            do {
                try body.fence.check()
            } catch {
                body.vetoed.withLock { $0 = true }
                throw error
            }
            return ByteBuffer(bytes: body.bytes)
        }
    }
}
