import Foundation
import Hummingbird
import NIOCore

/// The sink's request context: Hummingbird's basic one plus the HTTP version the request came over.
public struct SinkRequestContext: RequestContext {
    /// Hummingbird's per-request storage.
    public var coreContext: CoreRequestContextStorage
    /// Whether the request came over HTTP/2.
    public let isHTTP2: Bool
    /// The channel the request came on: the connection's (HTTP/1.1) or the stream's (HTTP/2), for the connection
    /// faults.
    public let channel: any Channel

    /// Creates the context of a request received on `source.channel`.
    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        // An HTTP/2 request arrives on a stream channel, the child of its connection's channel, itself the child
        // of the listening channel; an HTTP/1.1 request arrives on the connection's channel.
        isHTTP2 = source.channel.parent?.parent != nil
        channel = source.channel
    }

    /// Encodes the `Codable` answers with sorted keys, so that, for example, `/stats` lists statuses in order.
    public var responseEncoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}
